package tunnel

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Config is one cluster block's bastion: where it is, who we are to it, and
// how hard to hold on to the connection.
type Config struct {
	Host string // host:port of the bastion
	User string

	// Signer, or else PrivateKey: the PEM bytes of an unencrypted private
	// key, as a broker-scoped Hub secret delivers them.
	Signer     ssh.Signer
	PrivateKey []byte

	// KnownHosts is one known_hosts line for the bastion, e.g.
	// "[bastion.example]:22 ssh-ed25519 AAAA...". Required: the host key is
	// always verified against it.
	KnownHosts string

	// Ciphers, when set, is the cipher preference offered to the bastion,
	// from x/crypto/ssh's secure defaults only (an insecure name is a
	// config error). Empty is x/crypto/ssh's default order.
	Ciphers []string

	KeepaliveInterval time.Duration // default 15s
	KeepaliveMax      int           // unanswered keepalives before the connection is dead; default 3
	ConnectTimeout    time.Duration // TCP dial plus SSH handshake; default 10s
	BackoffMin        time.Duration // first wait between reconnects; default 200ms
	BackoffMax        time.Duration // cap of the doubling wait; default 10s
}

func (c Config) withDefaults() Config {
	if c.KeepaliveInterval <= 0 {
		c.KeepaliveInterval = 15 * time.Second
	}
	if c.KeepaliveMax <= 0 {
		c.KeepaliveMax = 3
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = 200 * time.Millisecond
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(10*time.Second, c.BackoffMin)
	}
	return c
}

// clientConfig checks c and builds the ssh.ClientConfig it describes.
func (c Config) clientConfig() (*ssh.ClientConfig, error) {
	if _, _, err := net.SplitHostPort(c.Host); err != nil {
		return nil, fmt.Errorf("host %q is not host:port: %w", c.Host, err)
	}
	if c.User == "" {
		return nil, errors.New("no user")
	}
	signer := c.Signer
	if signer == nil {
		if len(c.PrivateKey) == 0 {
			return nil, errors.New("no private key")
		}
		s, err := ssh.ParsePrivateKey(c.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		signer = s
	}
	pinned, err := parseKnownHost(c.KnownHosts)
	if err != nil {
		return nil, err
	}
	ciphers, err := checkCiphers(c.Ciphers)
	if err != nil {
		return nil, err
	}
	return &ssh.ClientConfig{
		Config:          ssh.Config{Ciphers: ciphers},
		User:            c.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: pinnedHostKey(c.Host, pinned),
		// Offer only the pinned key's algorithms: a bastion with several
		// host keys would otherwise present another one and look like a
		// mismatch.
		HostKeyAlgorithms: hostKeyAlgorithms(pinned),
		Timeout:           c.ConnectTimeout,
	}, nil
}

// parseKnownHost reads the one known_hosts line of a cluster block. The
// host patterns are not matched: the line belongs to this bastion by being
// in its block, and the key is what is pinned.
func parseKnownHost(line string) (ssh.PublicKey, error) {
	if len(bytes.TrimSpace([]byte(line))) == 0 {
		return nil, errors.New("no known_hosts entry: the bastion's host key must be pinned")
	}
	marker, _, key, _, _, err := ssh.ParseKnownHosts([]byte(line))
	if err != nil {
		return nil, fmt.Errorf("known_hosts entry: %w", err)
	}
	if marker != "" {
		return nil, fmt.Errorf("known_hosts entry: marker @%s is not supported (give the bastion's own key)", marker)
	}
	return key, nil
}

func pinnedHostKey(bastion string, pinned ssh.PublicKey) ssh.HostKeyCallback {
	want := pinned.Marshal()
	return func(_ string, _ net.Addr, got ssh.PublicKey) error {
		if bytes.Equal(got.Marshal(), want) {
			return nil
		}
		return &hostKeyError{msg: fmt.Sprintf("host key mismatch: bastion %s presented %s %s, the known_hosts entry pins %s %s",
			bastion, got.Type(), ssh.FingerprintSHA256(got), pinned.Type(), ssh.FingerprintSHA256(pinned))}
	}
}

func hostKeyAlgorithms(k ssh.PublicKey) []string {
	if k.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{k.Type()}
}

// checkCiphers refuses names outside x/crypto/ssh's secure set, so that no
// configuration can bring back CBC or RC4.
func checkCiphers(names []string) ([]string, error) {
	for _, n := range names {
		if !slices.Contains(ssh.SupportedAlgorithms().Ciphers, n) {
			return nil, fmt.Errorf("cipher %q is not one of %s", n, strings.Join(ssh.SupportedAlgorithms().Ciphers, ", "))
		}
	}
	return names, nil
}
