// Package hubtls is how the CLI and brokers trust a Hub's TLS certificate
// and when they refuse to talk to it in the clear. A Hub with a public
// certificate needs nothing; one whose certificate a private CA signed is
// trusted through that CA's certificate file (the CLI's --ca and
// hubs.<name>.ca, a broker connection's caFile). Plain http:// is refused
// to any Hub that is not on loopback unless the connection says otherwise
// (insecureHTTP): a token or a broker's signed upgrade sent in the clear
// across a network is a token given away.
//
// Standard library only: the CLI, the broker and launch all import it.
package hubtls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// maxCAFile bounds a CA file: a bundle of a few hundred certificates.
const maxCAFile = 1 << 20

// Settings is one Hub connection's trust: a CA file ("" for the system's
// roots) and whether plain http to a non-loopback Hub is allowed.
type Settings struct {
	CAFile       string
	InsecureHTTP bool
}

// LoadCA reads a PEM bundle of CA certificates into a pool holding only
// them: a Hub under a private CA is trusted for that CA, not for every
// public one besides. The file must be a regular file (a FIFO would hang
// the caller) of at most 1 MiB holding at least one certificate.
func LoadCA(path string) (*x509.CertPool, error) {
	b, err := readCA(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// CertificatesPEM is the CA file's certificates alone, PEM-encoded again:
// what may be handed on (to agents) from a file that could also hold a
// private key (a bundle made with cat), which must not travel with them.
func CertificatesPEM(path string) ([]byte, error) {
	b, err := readCA(path)
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			continue
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: blk.Bytes})...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return out, nil
}

// readCA reads a CA file: a regular file (a FIFO would hang the caller)
// of at most 1 MiB.
func readCA(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("CA file %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	if len(b) > maxCAFile {
		return nil, fmt.Errorf("CA file %s: larger than %d bytes", path, maxCAFile)
	}
	return b, nil
}

// ClientConfig is the TLS configuration of requests to a Hub under s: the
// CA's pool, or the system's roots when s names none. TLS 1.2 at least,
// as the Hub serves.
func ClientConfig(s Settings) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pool, err := LoadCA(s.CAFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	return c, nil
}

// Transport is an HTTP transport for a Hub under s, cloned from
// net/http's default (its proxy, dial and idle settings); nil when s
// changes nothing, so that callers keep their default.
func Transport(s Settings) (*http.Transport, error) {
	if s.CAFile == "" {
		return nil, nil
	}
	c, err := ClientConfig(s)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = c
	// HTTP/1.1 only: the control channel is a WebSocket upgrade, which
	// HTTP/2 does not carry, and the Hub serves no HTTP/2.
	t.ForceAttemptHTTP2 = false
	t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	return t, nil
}

// IsLoopback reports whether host (a URL's host, with or without a port)
// is this machine: localhost or a loopback address.
func IsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckScheme refuses plain http (or ws) to a Hub that is not on
// loopback unless insecure allows it; who is the flag that allows it,
// for the message.
func CheckScheme(hubURL string, insecure bool, who string) error {
	u, err := url.Parse(hubURL)
	if err != nil {
		return fmt.Errorf("hub URL %q: %w", hubURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "ws") || insecure || IsLoopback(u.Host) {
		return nil
	}
	return fmt.Errorf("refusing plain http to the Hub at %s, which is not on this machine: its tokens would cross the network in the clear. "+
		"Serve the Hub over TLS (scion server start --tls-cert/--tls-key) and use https://, or pass %s on a network you trust", hubURL, who)
}

// ErrUntrusted is what Explain wraps for a certificate the caller does
// not trust.
var ErrUntrusted = errors.New("the Hub's TLS certificate is not trusted")

// Explain turns a TLS verification failure into an error that names the
// fix (fix: the flag or setting that gives the CA, for the caller's
// context); any other error comes back as it is.
func Explain(err error, hubURL, fix string) error {
	if err == nil {
		return nil
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var inv x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	switch {
	case errors.As(err, &ua):
		return fmt.Errorf("%w: the certificate of %s is signed by an authority this machine does not know (a private or self-signed CA): %s: %v",
			ErrUntrusted, hubURL, fix, err)
	case errors.As(err, &hn):
		return fmt.Errorf("%w: the certificate of %s is not for that host name: use the name the certificate was issued for, or reissue it: %v",
			ErrUntrusted, hubURL, err)
	case errors.As(err, &inv):
		return fmt.Errorf("%w: the certificate of %s is invalid (expired or not yet valid?): %v", ErrUntrusted, hubURL, err)
	case errors.As(err, &ve):
		return fmt.Errorf("%w: %s: %s: %v", ErrUntrusted, hubURL, fix, err)
	}
	return err
}

// Explaining wraps base (nil: net/http's default) so that a certificate
// the caller does not trust fails with Explain's message: a broker's log
// then says which flag fixes its reconnect loop.
func Explaining(base http.RoundTripper, hubURL, fix string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return explaining{base: base, hub: hubURL, fix: fix}
}

type explaining struct {
	base     http.RoundTripper
	hub, fix string
}

func (e explaining) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := e.base.RoundTrip(r)
	if err != nil {
		return nil, Explain(err, e.hub, e.fix)
	}
	return resp, nil
}
