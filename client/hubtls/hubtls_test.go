package hubtls

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.9.9.9": true, "localhost:1": true, "LOCALHOST": true,
		"[::1]:443": true, "::1": true,
		"10.0.0.5:8080": false, "hub.example.com": false, "localhost.example.com": false,
		"[::ffff:10.0.0.1]:80": false, "0.0.0.0:80": false, "": false,
	} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestCheckScheme(t *testing.T) {
	for _, tc := range []struct {
		url      string
		insecure bool
		refused  bool
	}{
		{"http://127.0.0.1:8080", false, false},
		{"http://localhost:8080", false, false},
		{"https://10.0.0.5", false, false},
		{"wss://hub.example.com", false, false},
		{"http://10.0.0.5:8080", false, true},
		{"ws://hub.example.com/api", false, true},
		{"http://hub.example.com", true, false},
	} {
		err := CheckScheme(tc.url, tc.insecure, "--insecure-http")
		if (err != nil) != tc.refused {
			t.Errorf("CheckScheme(%s, insecure=%v) = %v, want refused %v", tc.url, tc.insecure, err, tc.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "--insecure-http") || !strings.Contains(err.Error(), "--tls-cert")) {
			t.Errorf("refusal names neither fix: %v", err)
		}
	}
}

func TestLoadCARefusesWhatIsNoCA(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	noPEM := filepath.Join(dir, "junk.pem")
	big := filepath.Join(dir, "big.pem")
	fifo := filepath.Join(dir, "fifo")
	must(t, os.WriteFile(empty, nil, 0o600))
	must(t, os.WriteFile(noPEM, []byte("not a certificate\n"), 0o600))
	must(t, os.WriteFile(big, make([]byte, maxCAFile+10), 0o600))
	must(t, syscall.Mkfifo(fifo, 0o600))
	for path, want := range map[string]string{
		empty: "no PEM certificate", noPEM: "no PEM certificate", big: "larger than",
		fifo: "not a regular file", filepath.Join(dir, "missing"): "no such file",
	} {
		if _, err := LoadCA(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadCA(%s) = %v, want an error saying %q", filepath.Base(path), err, want)
		}
	}
}

// A Hub under a CA the client lacks fails with the fix named; the same
// client given the CA file gets through.
func TestUntrustedCertificateNamesTheFixAndTheCAFixesIt(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	must(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	plain := &http.Client{Transport: Explaining(nil, srv.URL, "pass --ca <file>")}
	_, err := plain.Get(srv.URL)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "pass --ca <file>") || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("without the CA: %v; want ErrUntrusted naming the Hub and the fix", err)
	}

	tr, err := Transport(Settings{CAFile: ca})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: Explaining(tr, srv.URL, "")}).Get(srv.URL)
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	resp.Body.Close()
	if resp.TLS == nil || resp.TLS.NegotiatedProtocol == "h2" {
		t.Fatalf("TLS state %+v: want TLS without HTTP/2", resp.TLS)
	}
	if tr, err := Transport(Settings{}); tr != nil || err != nil {
		t.Fatalf("no CA: %v %v, want the caller's default transport", tr, err)
	}
}

func TestExplainLeavesOtherErrorsAlone(t *testing.T) {
	e := errors.New("connection refused")
	if got := Explain(e, "https://h", "fix"); got != e {
		t.Fatalf("Explain changed %v into %v", e, got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A bundle that also holds a private key hands on its certificates only.
func TestCertificatesPEMDropsKeys(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("very secret key bytes")})
	p := filepath.Join(t.TempDir(), "bundle.pem")
	must(t, os.WriteFile(p, append(append([]byte{}, key...), cert...), 0o600))
	got, err := CertificatesPEM(p)
	if err != nil || string(got) != string(cert) {
		t.Fatalf("CertificatesPEM = %q, %v; want the certificate alone", got, err)
	}
	keyOnly := filepath.Join(t.TempDir(), "key.pem")
	must(t, os.WriteFile(keyOnly, key, 0o600))
	if _, err := CertificatesPEM(keyOnly); err == nil {
		t.Fatal("a file of keys alone was handed on")
	}
}
