// Package oidcprovider is an OpenID Connect provider for tests, served by
// an httptest server in the test process: discovery, a JWKS with an RSA
// key generated per instance, an RFC 8628 device authorization endpoint
// and a token endpoint for the device_code grant.
//
// A test plays the user with Approve or Deny, and the provider's faults
// with SlowDown, Expire and IDTokenFault (an expired ID token, one for
// another audience, one signed by a key that is not in the JWKS).
//
// For machine identities (serviceaccount.go) it mints service accounts'
// ID tokens for any audience: through the JWT-bearer grant of a key file,
// and through a metadata server.
package oidcprovider

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Claims are what the user's ID token says about them.
type Claims struct {
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
}

// Fault makes the provider issue a bad ID token.
type Fault int

const (
	// NoFault issues good ID tokens.
	NoFault Fault = iota
	// Expired issues an ID token that expired an hour ago.
	Expired
	// WrongAudience issues an ID token for another client.
	WrongAudience
	// WrongKey signs the ID token with a key that is not in the JWKS
	// (under the published key ID, as a forger would).
	WrongKey
	// NoSubject issues an ID token without a subject.
	NoSubject
)

// Options shape a Provider.
type Options struct {
	// ClientID and ClientSecret are the one client the provider knows
	// (defaults "scion-hub" and "test-secret"). The secret is accepted
	// with HTTP Basic or in the form (client_secret_post).
	ClientID, ClientSecret string
	// Interval is the polling interval the device endpoint announces, in
	// seconds (default 5).
	Interval int
	// ExpiresIn is how long a device code lives (default 10 minutes).
	ExpiresIn time.Duration
}

// Provider is a running test OIDC provider. Its URL is its issuer.
type Provider struct {
	*httptest.Server
	Issuer       string
	ClientID     string
	ClientSecret string

	opts  Options
	key   *rsa.PrivateKey
	keyID string

	mu     sync.Mutex
	flows  map[string]*flow // by device code
	byUser map[string]*flow // by user code
	order  []*flow
	fault  Fault
	// Service accounts (serviceaccount.go).
	accounts map[string]*serviceAccount // by email
	saLife   time.Duration
	saMinted int
	forged   *rsa.PrivateKey
	issued   []string // ID tokens, in order
	access   []string // access tokens, in order
}

type flowState int

const (
	pending flowState = iota
	approved
	denied
	used
)

type flow struct {
	deviceCode, userCode string
	scope                string
	expires              time.Time
	state                flowState
	claims               Claims
	slowDown             int
	polls                int
}

// New starts a provider; it stops when the test ends.
func New(t testing.TB, opts Options) *Provider {
	t.Helper()
	if opts.ClientID == "" {
		opts.ClientID = "scion-hub"
	}
	if opts.ClientSecret == "" {
		opts.ClientSecret = "test-secret"
	}
	if opts.Interval == 0 {
		opts.Interval = 5
	}
	if opts.ExpiresIn == 0 {
		opts.ExpiresIn = 10 * time.Minute
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("oidcprovider: key: %v", err)
	}
	p := &Provider{ClientID: opts.ClientID, ClientSecret: opts.ClientSecret, opts: opts, key: key,
		keyID: randomCode(8), flows: map[string]*flow{}, byUser: map[string]*flow{}}
	m := http.NewServeMux()
	m.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	m.HandleFunc("GET /jwks", p.jwks)
	m.HandleFunc("POST /device/code", p.deviceAuthorization)
	m.HandleFunc("POST /token", p.tokenOrServiceAccount)
	m.HandleFunc("GET /device", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "test provider: the test approves or denies the code")
	})
	p.Server = httptest.NewServer(m)
	p.Issuer = p.URL
	t.Cleanup(p.Close)
	return p
}

// IDTokenFault makes the ID tokens issued from now on bad in the given way
// (NoFault makes them good again).
func (p *Provider) IDTokenFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// Approve signs the user in for a pending user code.
func (p *Provider) Approve(userCode string, c Claims) error {
	return p.decide(userCode, func(f *flow) { f.state, f.claims = approved, c })
}

// Deny refuses a pending user code, as a user clicking "deny" would.
func (p *Provider) Deny(userCode string) error {
	return p.decide(userCode, func(f *flow) { f.state = denied })
}

// SlowDown makes the next poll of a user code's flow answer slow_down.
func (p *Provider) SlowDown(userCode string) error {
	return p.decide(userCode, func(f *flow) { f.slowDown++ })
}

// Expire ends a user code's flow: polls answer expired_token.
func (p *Provider) Expire(userCode string) error {
	return p.decide(userCode, func(f *flow) { f.expires = time.Now().Add(-time.Second) })
}

func (p *Provider) decide(userCode string, do func(*flow)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.byUser[userCode]
	if !ok || f.state != pending {
		return fmt.Errorf("oidcprovider: no pending flow for user code %q", userCode)
	}
	do(f)
	return nil
}

// UserCodes lists the user codes of flows still waiting for the user, in
// the order they were started.
func (p *Provider) UserCodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, f := range p.order {
		if f.state == pending && time.Now().Before(f.expires) {
			out = append(out, f.userCode)
		}
	}
	return out
}

// Polls is how many token requests a user code's flow has seen.
func (p *Provider) Polls(userCode string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.byUser[userCode]; ok {
		return f.polls
	}
	return 0
}

// IDTokens are the ID tokens issued so far, in order (for tests that
// check they appear in no log and no answer).
func (p *Provider) IDTokens() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.issued...)
}

// AccessTokens are the access tokens issued so far, in order.
func (p *Provider) AccessTokens() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.access...)
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "/authorize",
		"token_endpoint":                        p.Issuer + "/token",
		"device_authorization_endpoint":         p.Issuer + "/device/code",
		"jwks_uri":                              p.Issuer + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"grant_types_supported":                 []string{"urn:ietf:params:oauth:grant-type:device_code"},
		"scopes_supported":                      []string{"openid", "email", "profile"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: p.keyID, Algorithm: string(jose.RS256), Use: "sig"},
	}})
}

// clientOK checks the client's credentials: HTTP Basic (form-encoded, as
// RFC 6749 2.3.1 says) or client_id/client_secret in the form.
func (p *Provider) clientOK(r *http.Request) bool {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if fid := r.PostForm.Get("client_id"); fid != "" && fid != id {
			return false
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	return id == p.ClientID && secret == p.ClientSecret
}

func (p *Provider) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	if !p.clientOK(r) {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or bad secret")
		return
	}
	scope := r.PostForm.Get("scope")
	if !strings.Contains(" "+scope+" ", " openid ") {
		oauthError(w, http.StatusBadRequest, "invalid_scope", "openid scope required")
		return
	}
	p.mu.Lock()
	f := &flow{deviceCode: "dc-" + randomCode(24), userCode: userCode(), scope: scope,
		expires: time.Now().Add(p.opts.ExpiresIn)}
	p.flows[f.deviceCode], p.byUser[f.userCode] = f, f
	p.order = append(p.order, f)
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code":               f.deviceCode,
		"user_code":                 f.userCode,
		"verification_uri":          p.Issuer + "/device",
		"verification_uri_complete": p.Issuer + "/device?user_code=" + url.QueryEscape(f.userCode),
		"expires_in":                int(p.opts.ExpiresIn / time.Second),
		"interval":                  p.opts.Interval,
	})
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	if !p.clientOK(r) {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or bad secret")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "urn:ietf:params:oauth:grant-type:device_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only the device_code grant")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.flows[r.PostForm.Get("device_code")]
	if !ok || f.state == used {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or used device code")
		return
	}
	f.polls++
	switch {
	case time.Now().After(f.expires):
		oauthError(w, http.StatusBadRequest, "expired_token", "the device code has expired")
	case f.state == denied:
		oauthError(w, http.StatusBadRequest, "access_denied", "the user denied the request")
	case f.slowDown > 0:
		f.slowDown--
		oauthError(w, http.StatusBadRequest, "slow_down", "polling too fast")
	case f.state == pending:
		oauthError(w, http.StatusBadRequest, "authorization_pending", "waiting for the user")
	default:
		idToken, err := p.idToken(f.claims)
		if err != nil {
			oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
			return
		}
		f.state = used
		at := "at-" + randomCode(24)
		p.issued, p.access = append(p.issued, idToken), append(p.access, at)
		writeJSON(w, http.StatusOK, map[string]any{
			"access_token": at,
			"token_type":   "Bearer",
			"expires_in":   3600,
			"scope":        f.scope,
			"id_token":     idToken,
		})
	}
}

// idToken signs the claims as an ID token, bent by the current fault.
// Called with p.mu held.
func (p *Provider) idToken(c Claims) (string, error) {
	now := time.Now()
	claims := map[string]any{
		"iss": p.Issuer, "sub": c.Subject, "aud": p.ClientID,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	if c.Email != "" {
		claims["email"] = c.Email
		claims["email_verified"] = c.EmailVerified
	}
	if c.Name != "" {
		claims["name"] = c.Name
	}
	key := p.key
	switch p.fault {
	case Expired:
		claims["iat"], claims["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
	case WrongAudience:
		claims["aud"] = "another-client"
	case NoSubject:
		delete(claims, "sub")
	case WrongKey:
		if p.forged == nil {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				return "", err
			}
			p.forged = k
		}
		key = p.forged
	}
	return p.sign(key, claims)
}

// sign makes a JWT of claims signed by key under the published key ID.
func (p *Provider) sign(key *rsa.PrivateKey, claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: p.keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

const codeAlphabet = "BCDFGHJKLMNPQRSTVWXZ" // no vowels: no words in codes

func userCode() string {
	c := randomFrom(codeAlphabet, 8)
	return c[:4] + "-" + c[4:]
}

func randomCode(n int) string {
	return randomFrom("abcdefghijklmnopqrstuvwxyz0123456789", n)
}

func randomFrom(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
