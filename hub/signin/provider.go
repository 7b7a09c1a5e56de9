package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/scion-go/scion/api"
)

// The Hub's side of RFC 8628 against the OIDC provider: discovery (once,
// cached once it works), the device authorization request and one token
// request per poll. Neither the provider's tokens, nor the device code,
// nor the client secret is ever logged or returned; refusals are logged
// with a reason.

// Provider is what discovery taught the Hub about its provider.
type Provider struct {
	verifier  *oidc.IDTokenVerifier
	deviceURL string
	tokenURL  string
	// styles are the client authentication methods to try, in order; the
	// first that the provider accepts is kept (styleOK).
	styles  []authStyle
	styleOK authStyle
}

type authStyle int

const (
	styleUnknown authStyle = iota
	styleNone              // a public client: client_id only
	styleBasic             // client_secret_basic
	stylePost              // client_secret_post
)

// providerErr is the answer when the provider cannot be used; the Hub log
// has the details.
func providerErr(format string, args ...any) *api.Error {
	return api.Errorf(api.CodeOIDCProviderError, format+"; the Hub log has the details", args...)
}

// Discover fetches the provider's discovery document the first time it
// answers, and keeps it.
func (o *Client) Discover(ctx context.Context) (*Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	cfg, log := o.cfg, o.log
	if err := cfg.Validate(); err != nil {
		return nil, err // an internal error: logged, answered generically
	}
	// go-oidc keeps this context's HTTP client (not its deadline) for the
	// key set it fetches later.
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.hc), cfg.IssuerURL)
	if err != nil {
		log.Warn("oidc sign-in refused", "reason", "provider discovery failed", "issuer", cfg.IssuerURL, "err", err)
		return nil, providerErr("the Hub cannot read its OIDC provider's discovery document")
	}
	var meta struct {
		DeviceURL   string   `json:"device_authorization_endpoint"`
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := p.Claims(&meta); err != nil || meta.DeviceURL == "" {
		log.Warn("oidc sign-in refused", "reason", "the provider has no device_authorization_endpoint", "issuer", cfg.IssuerURL)
		return nil, providerErr("the Hub's OIDC provider does not offer the device flow")
	}
	info := &Provider{
		verifier:  p.Verifier(&oidc.Config{ClientID: cfg.ClientID}),
		deviceURL: meta.DeviceURL,
		tokenURL:  p.Endpoint().TokenURL,
		styles:    authStyles(cfg.ClientSecret != "", meta.AuthMethods),
	}
	o.provider = info
	return info, nil
}

// authStyles orders the client authentication methods to try: without a
// secret, none; else client_secret_basic (the discovery default), then
// client_secret_post, keeping only those the provider lists (if it lists
// any).
func authStyles(secret bool, supported []string) []authStyle {
	if !secret {
		return []authStyle{styleNone}
	}
	var out []authStyle
	if len(supported) == 0 || slices.Contains(supported, "client_secret_basic") {
		out = append(out, styleBasic)
	}
	if len(supported) == 0 || slices.Contains(supported, "client_secret_post") {
		out = append(out, stylePost)
	}
	if len(out) == 0 {
		out = []authStyle{styleBasic, stylePost}
	}
	return out
}

// oauthError is an OAuth 2.0 error response.
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

// post sends a form to the provider with the Hub's client credentials.
// When the provider refuses the client (invalid_client) it tries the next
// authentication method, and it keeps the first that works.
func (o *Client) post(ctx context.Context, p *Provider, endpoint string, form url.Values) (int, []byte, error) {
	o.mu.Lock()
	styles := p.styles
	if p.styleOK != styleUnknown {
		styles = []authStyle{p.styleOK}
	}
	o.mu.Unlock()
	var status int
	var body []byte
	for _, st := range styles {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set("client_id", o.cfg.ClientID)
		if st == stylePost {
			f.Set("client_secret", o.cfg.ClientSecret)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(f.Encode()))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if st == styleBasic {
			// RFC 6749 2.3.1: form-encode both before Basic.
			req.SetBasicAuth(url.QueryEscape(o.cfg.ClientID), url.QueryEscape(o.cfg.ClientSecret))
		}
		resp, err := o.hc.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // the URL is logged separately
			}
			o.log.Warn("oidc sign-in refused", "reason", "provider unreachable", "endpoint", endpoint, "err", err)
			return 0, nil, providerErr("the Hub cannot reach its OIDC provider")
		}
		body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err != nil {
			return 0, nil, providerErr("the Hub's OIDC provider sent a broken answer")
		}
		status = resp.StatusCode
		if status == http.StatusUnauthorized || (status == http.StatusBadRequest && oauthErrorCode(body) == "invalid_client") {
			continue // try the next way of authenticating
		}
		if status < 500 {
			o.mu.Lock()
			p.styleOK = st
			o.mu.Unlock()
		}
		break
	}
	return status, body, nil
}

func oauthErrorCode(body []byte) string {
	var e oauthError
	_ = json.Unmarshal(body, &e)
	return e.Code
}

// flexInt is a JSON number that some providers send as a string.
type flexInt int

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*n = flexInt(v)
	return nil
}

// DeviceAuthorization is RFC 8628 3.1-3.2 with scope "openid email profile".
func (o *Client) DeviceAuthorization(ctx context.Context, p *Provider) (*api.DeviceAuthorization, error) {
	status, body, err := o.post(ctx, p, p.deviceURL, url.Values{"scope": {"openid email profile"}})
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		var e oauthError
		_ = json.Unmarshal(body, &e)
		o.log.Warn("oidc sign-in refused", "reason", "the provider refused the device authorization request",
			"status", status, "error", e.Code, "description", e.Description)
		return nil, providerErr("the Hub's OIDC provider refused to start a device sign-in (%s)", orStatus(e.Code, status))
	}
	var d struct {
		DeviceCode              string  `json:"device_code"`
		UserCode                string  `json:"user_code"`
		VerificationURI         string  `json:"verification_uri"`
		VerificationURL         string  `json:"verification_url"` // an older draft's name, still sent by some
		VerificationURIComplete string  `json:"verification_uri_complete"`
		ExpiresIn               flexInt `json:"expires_in"`
		Interval                flexInt `json:"interval"`
	}
	if err := json.Unmarshal(body, &d); err != nil || d.DeviceCode == "" || d.UserCode == "" ||
		(d.VerificationURI == "" && d.VerificationURL == "") {
		o.log.Warn("oidc sign-in refused", "reason", "the provider's device authorization answer lacks a field")
		return nil, providerErr("the Hub's OIDC provider sent an unusable device authorization")
	}
	out := &api.DeviceAuthorization{
		DeviceCode:              d.DeviceCode,
		UserCode:                d.UserCode,
		VerificationURI:         firstNonEmptyString(d.VerificationURI, d.VerificationURL),
		VerificationURIComplete: d.VerificationURIComplete,
		ExpiresIn:               int(d.ExpiresIn),
		Interval:                int(d.Interval),
	}
	if out.Interval <= 0 {
		out.Interval = 5 // RFC 8628 3.2
	}
	if out.ExpiresIn <= 0 {
		out.ExpiresIn = 600
	}
	return out, nil
}

// DeviceToken makes one token request (RFC 8628 3.4-3.5) and returns the
// raw ID token, or the typed error the client polls on.
func (o *Client) DeviceToken(ctx context.Context, p *Provider, deviceCode string) (string, error) {
	status, body, err := o.post(ctx, p, p.tokenURL, url.Values{
		"grant_type":  {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code": {deviceCode},
	})
	if err != nil {
		return "", err
	}
	if status == http.StatusOK {
		var t struct {
			IDToken string `json:"id_token"`
		}
		if json.Unmarshal(body, &t) != nil || t.IDToken == "" {
			o.log.Warn("oidc sign-in refused", "reason", "the provider's token answer has no id_token")
			return "", providerErr("the Hub's OIDC provider returned no ID token (is the openid scope allowed for the Hub's client?)")
		}
		return t.IDToken, nil
	}
	code := oauthErrorCode(body)
	bad := func(c, msg string) error { return api.Errorf(c, "%s", msg) }
	switch code {
	case "authorization_pending":
		return "", bad(api.CodeAuthorizationPending, "waiting for the user to approve the sign-in at the provider")
	case "slow_down":
		return "", bad(api.CodeSlowDown, "polling too fast: wait 5 seconds longer between polls")
	case "expired_token":
		o.log.Info("oidc sign-in refused", "reason", "the device code expired")
		return "", bad(api.CodeExpiredToken, "the sign-in code expired before it was approved; start again")
	case "access_denied":
		o.log.Info("oidc sign-in refused", "reason", "the user denied the sign-in at the provider")
		return "", bad(api.CodeAccessDenied, "the sign-in was denied at the provider")
	case "invalid_grant":
		o.log.Info("oidc sign-in refused", "reason", "unknown or used device code")
		return "", api.BadRequest("the device code is unknown, already used or expired; start the sign-in again")
	}
	o.log.Warn("oidc sign-in refused", "reason", "the provider refused the token request", "status", status, "error", code)
	return "", providerErr("the Hub's OIDC provider refused the token request (%s)", orStatus(code, status))
}

func orStatus(code string, status int) string {
	if code != "" {
		return code
	}
	return fmt.Sprintf("HTTP %d", status)
}

func firstNonEmptyString(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
