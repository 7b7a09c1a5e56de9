// Package certs makes TLS certificates for tests: self-signed ones that
// serve as their own CA, valid for localhost and 127.0.0.1, so that a
// test can start a Hub on https and trust it exactly.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Pair is a certificate and its key, PEM-encoded, and the certificate's
// serial number (what a client sees to tell two pairs apart).
type Pair struct {
	CertPEM, KeyPEM []byte
	Serial          *big.Int
}

// SelfSigned makes a certificate for localhost, 127.0.0.1 and ::1 that
// signs itself (a CA of one), named cn, valid from an hour ago for a day.
func SelfSigned(t testing.TB, cn string) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
		Serial:  serial,
	}
}

// Pool is a pool of the pairs' certificates.
func Pool(ps ...Pair) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, p := range ps {
		pool.AppendCertsFromPEM(p.CertPEM)
	}
	return pool
}

// Write puts p's certificate and key at certFile and keyFile (0600), each
// through a rename so that a server reading them never sees half a file.
func (p Pair) Write(t testing.TB, certFile, keyFile string) {
	t.Helper()
	writeAtomic(t, certFile, p.CertPEM)
	writeAtomic(t, keyFile, p.KeyPEM)
}

// WriteBundle writes the pairs' certificates to path, one after another:
// a CA file that trusts each of them.
func WriteBundle(t testing.TB, path string, ps ...Pair) {
	t.Helper()
	var b []byte
	for _, p := range ps {
		b = append(b, p.CertPEM...)
	}
	writeAtomic(t, path, b)
}

func writeAtomic(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
