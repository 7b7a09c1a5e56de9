package idtoken

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEffective(t *testing.T) {
	for _, tc := range []struct {
		name    string
		conn    Settings
		env     map[string]string
		want    Settings
		wantErr string
	}{
		{name: "none", want: Settings{}},
		{name: "iap", conn: Settings{ModeIAP, "client-a"}, want: Settings{ModeIAP, "client-a"}},
		{name: "iap without audience", conn: Settings{Mode: ModeIAP}, wantErr: "needs an audience"},
		{name: "cloud run defaults to the Hub's origin", conn: Settings{Mode: ModeCloudRunInvoker}, want: Settings{ModeCloudRunInvoker, "https://hub.example"}},
		{name: "unknown mode", conn: Settings{Mode: "basic", Audience: "x"}, wantErr: `"basic" is not one of`},
		{name: "audience alone", conn: Settings{Audience: "x"}, wantErr: "without a transport mode"},
		{name: "audience with a space", conn: Settings{ModeIAP, "a b"}, wantErr: "no spaces"},
		{name: "env overrides both", conn: Settings{ModeIAP, "client-a"}, env: map[string]string{EnvMode: ModeIAP, EnvAudience: "client-env"}, want: Settings{ModeIAP, "client-env"}},
		{name: "env mode on a plain connection", env: map[string]string{EnvMode: ModeIAP, EnvAudience: "client-env"}, want: Settings{ModeIAP, "client-env"}},
		{name: "env audience alone overrides the connection's", conn: Settings{ModeIAP, "client-a"}, env: map[string]string{EnvAudience: "client-b"}, want: Settings{ModeIAP, "client-b"}},
		{name: "env audience alone leaves a plain connection plain", env: map[string]string{EnvAudience: "client-b"}, want: Settings{}},
		{name: "env mode of another kind drops the connection's audience", conn: Settings{ModeIAP, "client-a"}, env: map[string]string{EnvMode: ModeCloudRunInvoker}, want: Settings{ModeCloudRunInvoker, "https://hub.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Effective(tc.conn, "https://hub.example/base/", env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Effective = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestHeaderByMode(t *testing.T) {
	if h := (Settings{Mode: ModeIAP}).Header(); h != "Proxy-Authorization" {
		t.Errorf("iap header %q", h)
	}
	if h := (Settings{Mode: ModeCloudRunInvoker}).Header(); h != "X-Serverless-Authorization" {
		t.Errorf("cloudrun_invoker header %q", h)
	}
}

// unsigned makes a token with claims (the package never verifies).
func unsigned(c map[string]any) string {
	b, _ := json.Marshal(c)
	return "e30." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

type countingSource struct {
	n    atomic.Int32
	life time.Duration
	now  func() time.Time
	err  error
}

func (s *countingSource) String() string { return "counting" }

func (s *countingSource) Token(_ context.Context, aud string) (string, time.Time, error) {
	if s.err != nil {
		return "", time.Time{}, s.err
	}
	n := s.n.Add(1)
	exp := s.now().Add(s.life)
	return unsigned(map[string]any{"aud": aud, "exp": exp.Unix(), "n": n}), exp, nil
}

// TestCacheRefreshesBeforeExpiry: a token is reused until a quarter of
// its life (at most 5 minutes) is left, then fetched again; a source that
// fails meanwhile leaves the still-valid token in use, and one that fails
// after the expiry is an error.
func TestCacheRefreshesBeforeExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	src := &countingSource{life: time.Hour, now: clock}
	c := NewCache(src)
	c.now = clock
	ctx := context.Background()
	first, err := c.Token(ctx, "aud-a")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(54 * time.Minute) // 6 minutes left: not due
	if tok, _ := c.Token(ctx, "aud-a"); tok != first || src.n.Load() != 1 {
		t.Fatalf("refetched with 6 minutes left (%d fetches)", src.n.Load())
	}
	if _, err := c.Token(ctx, "aud-b"); err != nil || src.n.Load() != 2 {
		t.Fatalf("another audience shares the token: %v, %d fetches", err, src.n.Load())
	}
	now = now.Add(time.Minute + time.Second) // under 5 minutes left
	second, _ := c.Token(ctx, "aud-a")
	if second == first || src.n.Load() != 3 {
		t.Fatalf("not refreshed with under 5 minutes left (%d fetches)", src.n.Load())
	}

	// A short-lived token: refreshed with a quarter of its life left.
	src.life = 40 * time.Second
	now = now.Add(2 * time.Hour)
	a, _ := c.Token(ctx, "aud-a")
	now = now.Add(29 * time.Second)
	if b, _ := c.Token(ctx, "aud-a"); b != a {
		t.Fatal("a 40 s token refetched after 29 s")
	}
	now = now.Add(2 * time.Second)
	if b, _ := c.Token(ctx, "aud-a"); b == a {
		t.Fatal("a 40 s token not refetched after 31 s")
	}

	src.err = errors.New("metadata server restarting")
	cur, _ := c.Token(ctx, "aud-a")
	now = now.Add(35 * time.Second) // due, still valid
	if tok, err := c.Token(ctx, "aud-a"); err != nil || tok != cur {
		t.Fatalf("a failed refresh of a valid token: %v", err)
	}
	now = now.Add(10 * time.Second) // expired
	if _, err := c.Token(ctx, "aud-a"); err == nil {
		t.Fatal("an expired token handed out while its source fails")
	}
}

func TestFileSourceChecksTheAudience(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := os.WriteFile(p, []byte(unsigned(map[string]any{"aud": []string{"x", "client-a"}, "exp": exp.Unix()})+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := FileSource{Path: p}
	if _, got, err := f.Token(context.Background(), "client-a"); err != nil || !got.Equal(exp) {
		t.Fatalf("Token = %v, %v", got, err)
	}
	if _, _, err := f.Token(context.Background(), "client-b"); err == nil || !strings.Contains(err.Error(), `needs "client-b"`) {
		t.Fatalf("a token for another audience: %v", err)
	}
	if err := os.WriteFile(p, []byte("not a token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Token(context.Background(), "client-a"); err == nil || strings.Contains(err.Error(), "not a token\"") {
		t.Fatalf("garbage: %v", err)
	}
	// A FIFO in its place is refused at once, not waited on.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := (FileSource{Path: fifo}).Token(context.Background(), "client-a"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO token file hung")
	}
}

func TestMetadataSource(t *testing.T) {
	var flavor atomic.Bool
	flavor.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" || r.URL.Path != "/computeMetadata/v1/instance/service-accounts/default/identity" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		if flavor.Load() {
			w.Header().Set("Metadata-Flavor", "Google")
		}
		_, _ = w.Write([]byte(unsigned(map[string]any{"aud": r.URL.Query().Get("audience"), "exp": time.Now().Add(time.Hour).Unix()})))
	}))
	defer srv.Close()
	m := MetadataSource{Host: strings.TrimPrefix(srv.URL, "http://")}
	tok, _, err := m.Token(context.Background(), "client-a")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := parseClaims(tok); !c.hasAudience("client-a") {
		t.Fatalf("token for %v", c.audiences())
	}
	flavor.Store(false)
	if _, _, err := m.Token(context.Background(), "client-a"); err == nil || !strings.Contains(err.Error(), "not a metadata server") {
		t.Fatalf("an answer without the flavor: %v", err)
	}
}

// TestKeyFileSource: the assertion is signed with the key file's key, for
// its token endpoint, with the connection's audience as target_audience.
func TestKeyFileSource(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		parts := strings.Split(r.Form.Get("assertion"), ".")
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || len(parts) != 3 {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
			http.Error(w, `{"error":"invalid_grant","error_description":"bad signature"}`, http.StatusBadRequest)
			return
		}
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		_ = json.Unmarshal(b, &got)
		_ = json.NewEncoder(w).Encode(map[string]string{"id_token": unsigned(map[string]any{"aud": got["target_audience"], "exp": time.Now().Add(time.Hour).Unix()})})
	}))
	defer srv.Close()
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	write := func(tokenURI string) string {
		kf, _ := json.Marshal(keyFile{Type: "service_account", ClientEmail: "broker@p.iam.example", PrivateKeyID: "k1",
			PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), TokenURI: tokenURI})
		p := filepath.Join(t.TempDir(), "key.json")
		if err := os.WriteFile(p, kf, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	k := KeyFileSource{Path: write(srv.URL + "/token")}
	tok, _, err := k.Token(context.Background(), "client-a")
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := parseClaims(tok); !c.hasAudience("client-a") {
		t.Fatalf("id token for %v", c.audiences())
	}
	if got["iss"] != "broker@p.iam.example" || got["aud"] != srv.URL+"/token" || got["target_audience"] != "client-a" {
		t.Fatalf("assertion claims %v", got)
	}
	// A token endpoint over plain HTTP off this machine is refused
	// before the signed assertion is sent.
	u, _ := url.Parse(srv.URL)
	k = KeyFileSource{Path: write("http://token.example:" + u.Port() + "/token")}
	if _, _, err := k.Token(context.Background(), "client-a"); err == nil || !strings.Contains(err.Error(), "must be https") {
		t.Fatalf("plain HTTP token endpoint: %v", err)
	}
}

func TestDefaultSourceOrder(t *testing.T) {
	all := map[string]string{EnvTokenFile: "/t", EnvMetadataHost: "127.0.0.1:1", EnvKeyFile: "/k"}
	for _, tc := range []struct {
		drop []string
		want string
	}{
		{nil, "token file /t"},
		{[]string{EnvTokenFile}, "metadata server 127.0.0.1:1"},
		{[]string{EnvTokenFile, EnvMetadataHost}, "service-account key file /k"},
	} {
		m := map[string]string{}
		for k, v := range all {
			m[k] = v
		}
		for _, k := range tc.drop {
			delete(m, k)
		}
		s, err := DefaultSource(env(m))
		if err != nil || s.String() != tc.want {
			if !onGoogleCloud(env(m)) {
				t.Errorf("without %v: %v, %v; want %s", tc.drop, s, err, tc.want)
			}
		}
	}
	if !onGoogleCloud(env(nil)) {
		if _, err := DefaultSource(env(nil)); !errors.Is(err, ErrNoSource) {
			t.Errorf("nothing configured: %v", err)
		}
	}
}

func TestTransportSetsTheHeader(t *testing.T) {
	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Proxy-Authorization") + "|" + r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	now := time.Now
	a := &Auth{Settings: Settings{ModeIAP, "client-a"}, Cache: NewCache(&countingSource{life: time.Hour, now: now})}
	hc := &http.Client{Transport: &Transport{Auth: a}}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer user-token")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := seen.Load().(string)
	if !strings.HasPrefix(got, "Bearer e30.") || !strings.HasSuffix(got, "|Bearer user-token") {
		t.Fatalf("headers seen: %q", got)
	}
	if req.Header.Get("Proxy-Authorization") != "" {
		t.Fatal("the caller's request was changed")
	}
}

// TestTransportOnlyToItsHub: the token goes to the Hub's scheme and host
// alone; a redirect to another host goes without it. A Hub reached over
// plain HTTP off this machine gets no transport auth at all.
func TestTransportOnlyToItsHub(t *testing.T) {
	seen := map[string]string{}
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["other"] = r.Header.Get("Proxy-Authorization")
		mu.Unlock()
	}))
	defer other.Close()
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["hub"] = r.Header.Get("Proxy-Authorization")
		mu.Unlock()
		// 127.0.0.1 and localhost are different hosts to the client.
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/elsewhere", http.StatusFound)
	}))
	defer hub.Close()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(unsigned(map[string]any{"aud": "client-a", "exp": time.Now().Add(time.Hour).Unix()})), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := env(map[string]string{EnvTokenFile: p})
	a, err := New(Settings{ModeIAP, "client-a"}, hub.URL, getenv)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &Transport{Auth: a}}).Get(hub.URL + "/api/v1/agents")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(seen["hub"], "Bearer ") || seen["other"] != "" {
		t.Fatalf("the Hub saw %q, the redirect's host %q", seen["hub"], seen["other"])
	}
	if _, err := New(Settings{ModeIAP, "client-a"}, "http://hub.example", getenv); err == nil || !strings.Contains(err.Error(), "needs an https Hub URL") {
		t.Fatalf("plain HTTP off this machine: %v", err)
	}
}
