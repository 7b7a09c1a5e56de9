package hub_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/oidcprovider"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/sqlite"
)

// logBuffer collects a Hub's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// oidcHub is a Hub with OIDC sign-in against an in-process provider, with
// its log kept for inspection.
type oidcHub struct {
	URL   string
	P     *oidcprovider.Provider
	Store store.Store
	Anon  *client.Client // no caller
	Log   *logBuffer
	Cfg   *signin.Config
}

func newOIDCHub(t *testing.T, edit func(*signin.Config)) *oidcHub {
	t.Helper()
	p := oidcprovider.New(t, oidcprovider.Options{})
	cfg := &signin.Config{IssuerURL: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		AdminEmails: []string{"Boss@Example.com"}, RequestsPerMinute: 60000, Burst: 1000}
	if edit != nil {
		edit(cfg)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	h, err := hub.New(ctx, hub.Options{Store: st, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), OIDC: cfg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(func() { srv.Close(); h.Close(); _ = st.Close() })
	return &oidcHub{URL: srv.URL, P: p, Store: st, Anon: client.New(srv.URL, ""), Log: logs, Cfg: cfg}
}

// signIn runs a device flow to the end with the user's approval.
func (h *oidcHub) signIn(t *testing.T, c oidcprovider.Claims) *api.SignIn {
	t.Helper()
	ctx := context.Background()
	d, err := h.Anon.StartDeviceSignIn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.P.Approve(d.UserCode, c); err != nil {
		t.Fatal(err)
	}
	s, err := h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
	if err != nil {
		t.Fatalf("sign-in of %s: %v", c.Subject, err)
	}
	return s
}

// noSecrets fails if the Hub's log holds a credential: the provider's
// tokens, the client secret, a device code or a Hub token.
func (h *oidcHub) noSecrets(t *testing.T, extra ...string) {
	t.Helper()
	logs := h.Log.String()
	secrets := append(append(h.P.IDTokens(), h.P.AccessTokens()...), extra...)
	secrets = append(secrets, h.Cfg.ClientSecret)
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if strings.Contains(logs, s) {
			t.Errorf("the Hub log holds a secret (%.12s...):\n%s", s, logs)
		}
		// The signature part of a JWT alone is a secret too.
		if i := strings.LastIndexByte(s, '.'); i > 0 && strings.Contains(logs, s[i+1:]) {
			t.Errorf("the Hub log holds a token signature:\n%s", logs)
		}
	}
}

func TestOIDCDeviceSignIn(t *testing.T) {
	h := newOIDCHub(t, func(c *signin.Config) { c.DefaultRole = api.RoleMember })
	ctx := context.Background()

	d, err := h.Anon.StartDeviceSignIn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.DeviceCode == "" || d.UserCode == "" || !strings.HasPrefix(d.VerificationURI, h.P.Issuer) ||
		!strings.Contains(d.VerificationURIComplete, d.UserCode) || d.ExpiresIn != 600 || d.Interval != 5 {
		t.Fatalf("device authorization %+v", d)
	}
	// Before the user acts: pending, and slow_down when the provider says so.
	_, err = h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
	apiErr(t, err, http.StatusBadRequest, api.CodeAuthorizationPending)
	if err := h.P.SlowDown(d.UserCode); err != nil {
		t.Fatal(err)
	}
	_, err = h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
	apiErr(t, err, http.StatusBadRequest, api.CodeSlowDown)
	_, err = h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
	apiErr(t, err, http.StatusBadRequest, api.CodeAuthorizationPending)

	alice := oidcprovider.Claims{Subject: "alice-sub", Email: "alice@example.com", EmailVerified: true, Name: "Alice A"}
	if err := h.P.Approve(d.UserCode, alice); err != nil {
		t.Fatal(err)
	}
	first, err := h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Token, "scu_") || first.User.ID == "" || first.User.Name != "Alice A" ||
		first.User.Email != "alice@example.com" || first.User.Role != api.RoleMember {
		t.Fatalf("first sign-in %+v", first)
	}
	u, err := h.Store.GetUserBySubject(ctx, h.P.Issuer, "alice-sub")
	if err != nil || u.ID != first.User.ID || u.Issuer != h.P.Issuer || u.Role != api.RoleMember {
		t.Fatalf("stored user %+v %v", u, err)
	}
	// The device code is spent.
	_, err = h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
	apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)

	// The Hub token works.
	who, err := client.New(h.URL, first.Token).Whoami(ctx)
	if err != nil || who.Kind != "user" || who.ID != first.User.ID || who.Role != api.RoleMember || who.Name != "Alice A" {
		t.Fatalf("whoami %+v %v", who, err)
	}

	// A second sign-in finds the same user, with a new token; both work.
	second := h.signIn(t, alice)
	if second.User.ID != first.User.ID || second.Token == first.Token || second.User.Role != api.RoleMember {
		t.Fatalf("second sign-in %+v, first %+v", second, first)
	}
	for _, tok := range []string{first.Token, second.Token} {
		if _, err := client.New(h.URL, tok).Whoami(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// An admin email (verified; compared without case) makes an admin; the
	// same address unverified makes a default user without that email.
	boss := h.signIn(t, oidcprovider.Claims{Subject: "boss-sub", Email: "boss@example.com", EmailVerified: true})
	if boss.User.Role != api.RoleAdmin || boss.User.Name != "boss@example.com" {
		t.Fatalf("admin email: %+v", boss.User)
	}
	if who, err := client.New(h.URL, boss.Token).Whoami(ctx); err != nil || who.Role != api.RoleAdmin {
		t.Fatalf("admin whoami %+v %v", who, err)
	}
	fake := h.signIn(t, oidcprovider.Claims{Subject: "mallory-sub", Email: "boss@example.com", EmailVerified: false})
	if fake.User.Role != api.RoleMember || fake.User.Email != "" || fake.User.Name != "mallory-sub" || fake.User.ID == boss.User.ID {
		t.Fatalf("unverified admin email: %+v", fake.User)
	}
	users, _ := h.Store.ListUsers(ctx)
	if len(users) != 3 {
		t.Fatalf("%d users, want alice, boss and mallory", len(users))
	}
	if !strings.Contains(h.Log.String(), "oidc sign-in") {
		t.Errorf("no sign-in in the log:\n%s", h.Log.String())
	}
	h.noSecrets(t, d.DeviceCode, first.Token, second.Token, boss.Token, fake.Token)
}

func TestOIDCDefaultRoleIsViewer(t *testing.T) {
	h := newOIDCHub(t, nil)
	s := h.signIn(t, oidcprovider.Claims{Subject: "v", Email: "v@example.com", EmailVerified: true})
	if s.User.Role != api.RoleViewer {
		t.Fatalf("role %s, want viewer", s.User.Role)
	}
}

func TestOIDCDeniedAndExpired(t *testing.T) {
	h := newOIDCHub(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		end  func(userCode string) error
		code string
	}{
		{"denied", h.P.Deny, api.CodeAccessDenied},
		{"expired", h.P.Expire, api.CodeExpiredToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := h.Anon.StartDeviceSignIn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.end(d.UserCode); err != nil {
				t.Fatal(err)
			}
			_, err = h.Anon.PollDeviceSignIn(ctx, d.DeviceCode)
			apiErr(t, err, http.StatusBadRequest, tc.code)
			h.noSecrets(t, d.DeviceCode)
		})
	}
	if users, _ := h.Store.ListUsers(ctx); len(users) != 0 {
		t.Fatalf("a refused sign-in created %d users", len(users))
	}
}

// Bad ID tokens are refused with 401 and the standard body; the log says
// why, without the token; no user is created.
func TestOIDCBadIDTokensRefused(t *testing.T) {
	h := newOIDCHub(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		fault  oidcprovider.Fault
		reason string
	}{
		{"expired", oidcprovider.Expired, "ID token expired"},
		{"wrong audience", oidcprovider.WrongAudience, "ID token is for another audience"},
		{"wrong key", oidcprovider.WrongKey, "ID token signature does not verify"},
		{"no subject", oidcprovider.NoSubject, "ID token has no usable subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.P.IDTokenFault(tc.fault)
			d, err := h.Anon.StartDeviceSignIn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.P.Approve(d.UserCode, oidcprovider.Claims{Subject: "eve", Email: "boss@example.com", EmailVerified: true}); err != nil {
				t.Fatal(err)
			}
			body := []byte(`{"deviceCode":"` + d.DeviceCode + `"}`)
			status, ae := call(t, http.MethodPost, h.URL+"/api/v1/auth/device/token", "", "application/json", body)
			if status != http.StatusUnauthorized || ae == nil || ae.Code != api.CodeUnauthorized || !strings.Contains(ae.Message, tc.reason) {
				t.Fatalf("got %d %+v, want 401 unauthorized naming %q", status, ae, tc.reason)
			}
			if !strings.Contains(h.Log.String(), `msg="oidc sign-in refused" reason="`+tc.reason+`"`) {
				t.Errorf("no refusal with the reason in the log:\n%s", h.Log.String())
			}
			h.noSecrets(t, d.DeviceCode)
		})
	}
	if users, _ := h.Store.ListUsers(ctx); len(users) != 0 {
		t.Fatalf("a refused ID token created %d users", len(users))
	}
	// And good tokens still work afterwards.
	h.P.IDTokenFault(oidcprovider.NoFault)
	h.signIn(t, oidcprovider.Claims{Subject: "eve"})
}

func TestOIDCBadRequests(t *testing.T) {
	h := newOIDCHub(t, nil)
	tokenURL := h.URL + "/api/v1/auth/device/token"
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"no device code", []byte(`{}`), 400, api.CodeInvalidRequest},
		{"unknown device code", []byte(`{"deviceCode":"nope"}`), 400, api.CodeInvalidRequest},
		{"unknown field", []byte(`{"deviceCode":"x","token":"y"}`), 400, api.CodeInvalidRequest},
		{"oversized", append(append([]byte(`{"deviceCode":"`), bytes.Repeat([]byte("a"), 16<<10)...), `"}`...), 413, api.CodeRequestTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ae := call(t, http.MethodPost, tokenURL, "", "application/json", tc.body)
			if status != tc.status || ae == nil || ae.Code != tc.code {
				t.Fatalf("got %d %+v, want %d %s", status, ae, tc.status, tc.code)
			}
		})
	}
}

func TestOIDCProviderRefusesTheHub(t *testing.T) {
	h := newOIDCHub(t, func(c *signin.Config) { c.ClientSecret = "wrong-secret-value" })
	_, err := h.Anon.StartDeviceSignIn(context.Background())
	apiErr(t, err, http.StatusBadGateway, api.CodeOIDCProviderError)
	if !strings.Contains(h.Log.String(), "invalid_client") {
		t.Errorf("the log does not say why:\n%s", h.Log.String())
	}
	h.noSecrets(t)

	down := newOIDCHub(t, func(c *signin.Config) { c.IssuerURL = "http://127.0.0.1:1" })
	_, err = down.Anon.StartDeviceSignIn(context.Background())
	apiErr(t, err, http.StatusBadGateway, api.CodeOIDCProviderError)
}

func TestOIDCRateLimited(t *testing.T) {
	h := newOIDCHub(t, func(c *signin.Config) { c.RequestsPerMinute, c.Burst = 1, 2 })
	url := h.URL + "/api/v1/auth/device/token"
	for i := 0; i < 2; i++ {
		if status, _ := call(t, http.MethodPost, url, "", "application/json", []byte(`{"deviceCode":"x"}`)); status != 400 {
			t.Fatalf("request %d: %d", i, status)
		}
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"deviceCode":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	status, ae := call(t, http.MethodPost, h.URL+"/api/v1/auth/device", "", "", nil)
	if status != http.StatusTooManyRequests || ae.Code != api.CodeRateLimited {
		t.Fatalf("device start when limited: %d %+v", status, ae)
	}
}

func TestOIDCNotConfigured(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	for _, path := range []string{"/api/v1/auth/device", "/api/v1/auth/device/token"} {
		status, ae := call(t, http.MethodPost, e.URL+path, "", "application/json", []byte(`{"deviceCode":"x"}`))
		if status != http.StatusNotImplemented || ae.Code != api.CodeOIDCNotConfigured {
			t.Errorf("%s: %d %+v, want 501 oidc_not_configured", path, status, ae)
		}
	}
}
