package idtoken

import (
	"bytes"
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
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// Source mints an ID token for an audience.
type Source interface {
	// Token returns a token for audience and when it expires.
	Token(ctx context.Context, audience string) (string, time.Time, error)
	// String names the source in errors and logs (never a secret).
	String() string
}

// The environment a source is chosen by.
const (
	// EnvTokenFile names a file holding an ID token (a Kubernetes
	// projected service-account token), read again whenever the cached
	// token is due for refresh.
	EnvTokenFile = "SCION_TRANSPORT_TOKEN_FILE"
	// EnvMetadataHost is the metadata server's host:port (Google's own
	// variable; set it to use the metadata source off Google's cloud).
	EnvMetadataHost = "GCE_METADATA_HOST"
	// EnvKeyFile is a service-account key file (Google's own variable).
	EnvKeyFile = "GOOGLE_APPLICATION_CREDENTIALS"
)

const (
	defaultMetadataHost = "metadata.google.internal"
	fetchTimeout        = 10 * time.Second
	maxTokenBytes       = 64 << 10
	maxKeyFileBytes     = 64 << 10
)

// ErrNoSource is DefaultSource's error when nothing on this machine can
// mint a token.
var ErrNoSource = errors.New("no ID token source: set " + EnvTokenFile + " (a token file), run on Google Cloud (its metadata server, or " +
	EnvMetadataHost + "), or set " + EnvKeyFile + " to a service-account key file")

// DefaultSource picks the first source this machine has, in this order:
//
//  1. a token file named by SCION_TRANSPORT_TOKEN_FILE;
//  2. the metadata server of the cloud the process runs on: the host in
//     GCE_METADATA_HOST, else metadata.google.internal when the machine
//     says it is a Google Compute Engine VM (or a GKE node) or the process
//     runs on Cloud Run (K_SERVICE);
//  3. a service-account key file named by GOOGLE_APPLICATION_CREDENTIALS.
//
// The first one present is used; a failure of it is an error, not a
// fall-through to the next, so a broken projected token is not masked by a
// key file that mints for another identity.
func DefaultSource(getenv func(string) string) (Source, error) {
	if p := getenv(EnvTokenFile); p != "" {
		return FileSource{Path: p}, nil
	}
	if h := getenv(EnvMetadataHost); h != "" {
		return MetadataSource{Host: h}, nil
	}
	if onGoogleCloud(getenv) {
		return MetadataSource{Host: defaultMetadataHost}, nil
	}
	if p := getenv(EnvKeyFile); p != "" {
		return KeyFileSource{Path: p}, nil
	}
	return nil, ErrNoSource
}

// onGoogleCloud: a Compute Engine VM or GKE node names its product in
// DMI; Cloud Run sets K_SERVICE. No probe goes on the network.
func onGoogleCloud(getenv func(string) string) bool {
	if getenv("K_SERVICE") != "" {
		return true
	}
	b, err := os.ReadFile("/sys/class/dmi/id/product_name")
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "Google")
}

// FileSource reads the token from a file. A projected service-account
// token carries its audience; one that does not name the connection's
// audience is refused here rather than by the proxy.
type FileSource struct{ Path string }

func (f FileSource) String() string { return "token file " + f.Path }

func (f FileSource) Token(_ context.Context, audience string) (string, time.Time, error) {
	b, err := readBounded(f.Path, maxTokenBytes, "a token")
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", f, err)
	}
	tok := strings.TrimSpace(string(b))
	c, err := parseClaims(tok)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", f, err)
	}
	if !c.hasAudience(audience) {
		return "", time.Time{}, fmt.Errorf("%s: its token is for audience %q, the connection needs %q", f, c.audiences(), audience)
	}
	return tok, c.expiry(), nil
}

// MetadataSource asks a Google-style metadata server for an identity
// token of the machine's default service account.
type MetadataSource struct {
	Host string // host[:port]
	// Client is the HTTP client (nil: one that ignores proxies: the
	// metadata server is link-local).
	Client *http.Client
}

func (m MetadataSource) String() string { return "metadata server " + m.Host }

func (m MetadataSource) Token(ctx context.Context, audience string) (string, time.Time, error) {
	u := url.URL{Scheme: "http", Host: m.Host, Path: "/computeMetadata/v1/instance/service-accounts/default/identity",
		RawQuery: url.Values{"audience": {audience}, "format": {"full"}}.Encode()}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", m, err)
	}
	req.Header.Set("Metadata-Flavor", "Google")
	hc := m.Client
	if hc == nil {
		hc = directClient
	}
	b, h, err := fetch(hc, req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", m, err)
	}
	// Something on that name that is not a metadata server (a captive
	// portal, a typo in the host) would answer without the flavor.
	if h.Get("Metadata-Flavor") != "Google" {
		return "", time.Time{}, fmt.Errorf("%s: the answer is not a metadata server's (no Metadata-Flavor: Google)", m)
	}
	tok := strings.TrimSpace(string(b))
	c, err := parseClaims(tok)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", m, err)
	}
	return tok, c.expiry(), nil
}

// directClient reaches link-local and loopback servers without any
// HTTP proxy from the environment.
var directClient = &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}}

// KeyFileSource mints an ID token with a service-account key file: a
// JWT assertion signed with the key, exchanged at the key's token_uri
// for an ID token whose audience is target_audience.
type KeyFileSource struct {
	Path   string
	Client *http.Client // nil: http.DefaultClient's transport, with a timeout
}

func (k KeyFileSource) String() string { return "service-account key file " + k.Path }

type keyFile struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKey   string `json:"private_key"`
	PrivateKeyID string `json:"private_key_id"`
	TokenURI     string `json:"token_uri"`
}

func (k KeyFileSource) load() (*keyFile, *rsa.PrivateKey, error) {
	b, err := readBounded(k.Path, maxKeyFileBytes, "a key file")
	if err != nil {
		return nil, nil, err
	}
	var kf keyFile
	if err := json.Unmarshal(b, &kf); err != nil {
		return nil, nil, fmt.Errorf("not a service-account key file: %v", err)
	}
	if kf.Type != "service_account" || kf.ClientEmail == "" || kf.TokenURI == "" {
		return nil, nil, fmt.Errorf("not a service-account key file (type %q): it needs client_email, private_key and token_uri", kf.Type)
	}
	tu, err := url.Parse(kf.TokenURI)
	if err != nil || tu.Host == "" || (tu.Scheme != "https" && !(tu.Scheme == "http" && isLoopback(tu.Hostname()))) {
		// The signed assertion is a credential: never over plain HTTP
		// beyond this machine.
		return nil, nil, fmt.Errorf("token_uri %q: must be https (or http on loopback)", kf.TokenURI)
	}
	blk, _ := pem.Decode([]byte(kf.PrivateKey))
	if blk == nil {
		return nil, nil, errors.New("private_key is not PEM")
	}
	var key *rsa.PrivateKey
	if pk, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
		rk, ok := pk.(*rsa.PrivateKey)
		if !ok {
			return nil, nil, errors.New("private_key is not an RSA key")
		}
		key = rk
	} else if rk, err2 := x509.ParsePKCS1PrivateKey(blk.Bytes); err2 == nil {
		key = rk
	} else {
		return nil, nil, fmt.Errorf("private_key: %v", err)
	}
	return &kf, key, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (k KeyFileSource) Token(ctx context.Context, audience string) (string, time.Time, error) {
	kf, key, err := k.load()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", k, err)
	}
	now := time.Now()
	assertion, err := signJWT(key, kf.PrivateKeyID, map[string]any{
		"iss": kf.ClientEmail, "sub": kf.ClientEmail, "aud": kf.TokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "target_audience": audience,
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", k, err)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, kf.TokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", k, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := k.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	b, _, err := fetch(hc, req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: token endpoint: %w", k, err)
	}
	var out struct {
		IDToken string `json:"id_token"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.IDToken == "" {
		return "", time.Time{}, fmt.Errorf("%s: token endpoint: the answer holds no id_token", k)
	}
	c, err := parseClaims(out.IDToken)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: %w", k, err)
	}
	return out.IDToken, c.expiry(), nil
}

// readBounded reads a regular file of at most max bytes (what names what
// it should be, for the error). It is opened without blocking and must be
// a regular file: a FIFO named there would otherwise hang every request
// to the Hub. Symlinks are followed (a projected token is one).
func readBounded(path string, max int, what string) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file: not %s", what)
	}
	b, err := io.ReadAll(io.LimitReader(fh, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("larger than %d bytes: not %s", max, what)
	}
	return b, nil
}

// fetch sends req and returns a 200 answer's body (at most
// maxTokenBytes) and headers; another status is an error with the start
// of its body.
func fetch(hc *http.Client, req *http.Request) ([]byte, http.Header, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: %s", resp.Status, clip(string(b)))
	}
	if len(b) > maxTokenBytes {
		return nil, nil, fmt.Errorf("an answer larger than %d bytes", maxTokenBytes)
	}
	return b, resp.Header, nil
}

// signJWT signs claims with RS256.
func signJWT(key *rsa.PrivateKey, kid string, claims map[string]any) (string, error) {
	h := map[string]string{"alg": "RS256", "typ": "JWT"}
	if kid != "" {
		h["kid"] = kid
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(hb) + "." + enc.EncodeToString(cb)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// claims are the parts of a token this package reads (unverified: the
// token is ours to send, the proxy verifies it).
type claims struct {
	Exp int64           `json:"exp"`
	Aud json.RawMessage `json:"aud"`
}

func parseClaims(tok string) (claims, error) {
	var c claims
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return c, errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return c, errors.New("not a JWT: its payload is not base64url")
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, errors.New("not a JWT: its payload is not JSON")
	}
	if c.Exp == 0 {
		return c, errors.New("the token has no expiry (exp)")
	}
	return c, nil
}

func (c claims) expiry() time.Time { return time.Unix(c.Exp, 0) }

func (c claims) audiences() []string {
	var one string
	if json.Unmarshal(c.Aud, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(c.Aud, &many)
	return many
}

func (c claims) hasAudience(a string) bool {
	for _, x := range c.audiences() {
		if x == a {
			return true
		}
	}
	return false
}

// clip keeps an error body short and on one line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return string(bytes.ToValidUTF8([]byte(s), []byte("?")))
}
