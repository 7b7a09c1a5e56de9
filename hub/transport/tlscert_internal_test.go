package transport

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/testenv/certs"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The reloader serves a renewed pair within certCheckEvery of the
// change, keeps serving the last good pair when the files hold a broken
// one (saying so once), and takes the next good pair after that.
func TestCertReloaderTakesRenewalsAndSurvivesBrokenOnes(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key")
	one, two, three := certs.SelfSigned(t, "one"), certs.SelfSigned(t, "two"), certs.SelfSigned(t, "three")
	one.Write(t, cert, key)
	var logs syncBuf
	r, err := NewCertReloader(cert, key, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	serving := func() string {
		t.Helper()
		c, err := r.GetCertificate(nil)
		if err != nil || c == nil || c.Leaf == nil {
			t.Fatalf("GetCertificate: %v %v", c, err)
		}
		return c.Leaf.Subject.CommonName
	}
	if got := serving(); got != "one" {
		t.Fatalf("serving %q, want one", got)
	}

	two.Write(t, cert, key)
	if got := serving(); got != "one" {
		t.Fatalf("checked again within %v: serving %q", certCheckEvery, got)
	}
	now = now.Add(certCheckEvery)
	if got := serving(); got != "two" {
		t.Fatalf("after the renewal: serving %q, want two", got)
	}

	// A certificate written without its key: not loaded, twice over.
	if err := os.WriteFile(cert, three.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		now = now.Add(certCheckEvery)
		if got := serving(); got != "two" {
			t.Fatalf("with a broken pair: serving %q, want the last good one", got)
		}
	}
	if n := strings.Count(logs.String(), "renewed tls certificate not loaded"); n != 1 {
		t.Fatalf("the broken pair was reported %d times, want once:\n%s", n, logs.String())
	}
	if err := os.WriteFile(key, three.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(certCheckEvery)
	if got := serving(); got != "three" {
		t.Fatalf("with the key in place: serving %q, want three", got)
	}
}

func TestCertReloaderRefusesABadPairAtStart(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "hub.crt"), filepath.Join(dir, "hub.key")
	a, b := certs.SelfSigned(t, "a"), certs.SelfSigned(t, "b")
	if err := os.WriteFile(cert, a.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, b.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewCertReloader(cert, key, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), cert) || !strings.Contains(err.Error(), key) {
		t.Fatalf("mismatched pair: %v; want an error naming both files", err)
	}
	if _, err := NewCertReloader(filepath.Join(dir, "none.crt"), key, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a missing certificate was accepted")
	}
}
