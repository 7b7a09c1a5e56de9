package transport

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// certCheckEvery bounds how often a handshake looks at the certificate
// files: a renewal (certbot, cert-manager, an operator's cp) is served
// within a second, and a busy Hub stats two files once a second, not per
// connection.
const certCheckEvery = time.Second

// CertReloader serves the Hub's TLS certificate from its files and takes
// a renewed pair without a restart. A pair that does not load (a
// certificate copied before its key, a typo) leaves the one in service
// serving and is logged once; the next change of either file is tried
// again.
type CertReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	served  [2]fileStamp // the files of the pair in service
	tried   [2]fileStamp // the files last tried, loaded or not
	checked time.Time
}

// fileStamp tells a file's versions apart without reading it: a renewal
// writes a new file (new inode) or rewrites it (new size or time).
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	// A FIFO or a device would hang the handshakes that wait on the
	// reload: not loaded.
	if !fi.Mode().IsRegular() {
		return fileStamp{}, fmt.Errorf("%s is not a regular file", path)
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}, nil
}

// NewCertReloader loads the pair once; an error here stops the Hub from
// starting, with the files named.
func NewCertReloader(certFile, keyFile string, log *slog.Logger) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	st, err := r.stamps()
	if err != nil {
		return nil, err
	}
	c, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cert, r.served, r.tried, r.checked = c, st, st, r.now()
	if fi, err := os.Stat(keyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the TLS key file is readable by other users of this machine; chmod 600 it", "key", keyFile, "mode", fi.Mode().Perm().String())
	}
	r.logLoaded("tls certificate loaded", c)
	return r, nil
}

func (r *CertReloader) stamps() ([2]fileStamp, error) {
	c, err := stampOf(r.certFile)
	if err != nil {
		return [2]fileStamp{}, fmt.Errorf("tls certificate: %w", err)
	}
	k, err := stampOf(r.keyFile)
	if err != nil {
		return [2]fileStamp{}, fmt.Errorf("tls key: %w", err)
	}
	return [2]fileStamp{c, k}, nil
}

func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls certificate %s with key %s: %w", certFile, keyFile, err)
	}
	if c.Leaf == nil && len(c.Certificate) > 0 {
		c.Leaf, _ = x509.ParseCertificate(c.Certificate[0])
	}
	return &c, nil
}

func (r *CertReloader) logLoaded(msg string, c *tls.Certificate) {
	if c.Leaf == nil {
		r.log.Info(msg, "cert", r.certFile)
		return
	}
	r.log.Info(msg, "cert", r.certFile, "subject", c.Leaf.Subject.String(), "dns_names", c.Leaf.DNSNames,
		"not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	if left := c.Leaf.NotAfter.Sub(r.now()); left < 14*24*time.Hour {
		r.log.Warn("the TLS certificate expires soon; renew it (the Hub takes the new files without a restart)",
			"cert", r.certFile, "not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

// GetCertificate is the tls.Config hook: the pair in service, reloaded
// first if a file changed since the last look (at most once a second).
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= certCheckEvery {
		r.checked = now
		r.reloadLocked()
	}
	return r.cert, nil
}

func (r *CertReloader) reloadLocked() {
	st, err := r.stamps()
	if err != nil {
		if st != r.tried {
			r.log.Warn("tls certificate files unreadable; still serving the loaded certificate", "err", err)
			r.tried = st
		}
		return
	}
	if st == r.served || st == r.tried {
		return // unchanged, or the same broken pair as last time
	}
	r.tried = st
	c, err := loadPair(r.certFile, r.keyFile)
	if err != nil {
		r.log.Warn("renewed tls certificate not loaded; still serving the previous one", "err", err)
		return
	}
	r.cert, r.served = c, st
	r.logLoaded("tls certificate reloaded", c)
}

// ServerTLSConfig is the Hub's TLS: the reloader's certificate, TLS 1.2
// at least, and HTTP/1.1 only. HTTP/2 would carry many requests on one
// connection past the connection caps, and brokers' WebSocket upgrades
// need HTTP/1.1 anyway.
func ServerTLSConfig(r *CertReloader) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		NextProtos:     []string{"http/1.1"},
	}
}

// netConnOf is the connection under a TLS one (the limiter's), or c.
func netConnOf(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
