package oidcprovider

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Service accounts: machine identities whose ID tokens carry the audience
// the caller asks for (an IAP OAuth client ID, a Cloud Run URL), as
// Google's token endpoint and metadata server give them.

const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

type serviceAccount struct {
	email string
	key   *rsa.PrivateKey
	keyID string
}

// ServiceAccountKeyFile makes a service account named email and writes
// its key file (Google's format, token_uri this provider's token
// endpoint) in a temporary directory; it returns the file's path.
func (p *Provider) ServiceAccountKeyFile(t testing.TB, email string) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	sa := &serviceAccount{email: email, key: key, keyID: randomCode(10)}
	p.mu.Lock()
	if p.accounts == nil {
		p.accounts = map[string]*serviceAccount{}
	}
	p.accounts[email] = sa
	p.mu.Unlock()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "client_email": email, "private_key_id": sa.keyID,
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri":   p.Issuer + "/token",
	})
	path := filepath.Join(t.TempDir(), "sa-key.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SetServiceAccountTokenLife sets how long the service-account ID tokens
// minted from now on live (default an hour).
func (p *Provider) SetServiceAccountTokenLife(d time.Duration) {
	p.mu.Lock()
	p.saLife = d
	p.mu.Unlock()
}

// ServiceAccountTokens is how many service-account ID tokens were minted.
func (p *Provider) ServiceAccountTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.saMinted
}

// ServiceAccountToken mints an ID token for email and audience now (a
// projected token file's content, say).
func (p *Provider) ServiceAccountToken(t testing.TB, email, audience string) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	tok, err := p.saToken(email, audience)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// saToken signs a service account's ID token. Called with p.mu held.
func (p *Provider) saToken(email, audience string) (string, error) {
	now := time.Now()
	life := p.saLife
	if life <= 0 {
		life = time.Hour
	}
	tok, err := p.sign(p.key, map[string]any{
		"iss": p.Issuer, "sub": "sa-" + email, "email": email, "email_verified": true,
		"aud": audience, "iat": now.Unix(), "exp": now.Add(life).Unix(),
	})
	if err == nil {
		p.saMinted++
	}
	return tok, err
}

// tokenOrServiceAccount is the token endpoint: the JWT-bearer grant of a
// service account's key file, else the device flow's grant.
func (p *Provider) tokenOrServiceAccount(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	if r.PostForm.Get("grant_type") != jwtBearer {
		p.token(w, r)
		return
	}
	aud, email, err := p.checkAssertion(r.PostForm.Get("assertion"))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	p.mu.Lock()
	tok, err := p.saToken(email, aud)
	p.mu.Unlock()
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id_token": tok})
}

// checkAssertion verifies a key file's assertion: signed by a known
// service account's key, for this token endpoint, not expired, asking
// for an ID token (target_audience).
func (p *Provider) checkAssertion(a string) (audience, email string, err error) {
	jws, err := jose.ParseSigned(a, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", "", fmt.Errorf("assertion: %v", err)
	}
	var c struct {
		Iss, Sub, Aud  string
		Exp            int64
		TargetAudience string `json:"target_audience"`
	}
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c); err != nil {
		return "", "", errors.New("assertion: bad claims")
	}
	p.mu.Lock()
	sa := p.accounts[c.Iss]
	p.mu.Unlock()
	if sa == nil {
		return "", "", fmt.Errorf("unknown service account %q", c.Iss)
	}
	if _, err := jws.Verify(&sa.key.PublicKey); err != nil {
		return "", "", errors.New("assertion: bad signature")
	}
	switch {
	case c.Aud != p.Issuer+"/token":
		return "", "", fmt.Errorf("assertion for %q, not this token endpoint", c.Aud)
	case time.Now().Unix() > c.Exp:
		return "", "", errors.New("assertion expired")
	case c.TargetAudience == "":
		return "", "", errors.New("no target_audience: only ID tokens are minted here")
	}
	return c.TargetAudience, sa.email, nil
}

// MetadataServer serves a Google-style metadata server on loopback whose
// default service account is email: its identity endpoint mints this
// provider's ID tokens for the audience asked. It returns host:port (for
// GCE_METADATA_HOST).
func (p *Provider) MetadataServer(t testing.TB, email string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Metadata-Flavor", "Google")
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor:Google header", http.StatusForbidden)
			return
		}
		if r.URL.Path != "/computeMetadata/v1/instance/service-accounts/default/identity" {
			http.NotFound(w, r)
			return
		}
		aud := r.URL.Query().Get("audience")
		if aud == "" {
			http.Error(w, "audience is required", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		tok, err := p.saToken(email, aud)
		p.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(tok))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// VerifyServiceAccountToken checks a service account's ID token as a
// proxy would: this provider's signature, its issuer, the audience,
// unexpired. It returns the account's email.
func (p *Provider) VerifyServiceAccountToken(tok, audience string) (string, error) {
	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", err
	}
	b, err := jws.Verify(&p.key.PublicKey)
	if err != nil {
		return "", errors.New("bad signature")
	}
	var c struct {
		Iss, Aud, Email string
		Exp             int64
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return "", errors.New("bad claims")
	}
	switch {
	case c.Iss != p.Issuer:
		return "", fmt.Errorf("issuer %q", c.Iss)
	case c.Aud != audience:
		return "", fmt.Errorf("audience %q, want %q", c.Aud, audience)
	case time.Now().Unix() >= c.Exp:
		return "", errors.New("expired")
	}
	return c.Email, nil
}
