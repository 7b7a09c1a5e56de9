// Package client is the typed Go client of the Scion Hub REST API (/api/v1).
//
// It depends only on package api and the standard library, so the CLI, the
// Runtime Broker and tests can all use it without pulling in the Hub; a test
// in this package enforces that.
//
// Every call takes a context, which is the only deadline: agent creates and
// log streams may legitimately take long, so the client sets no timeout of
// its own. A non-2xx response is returned as *api.Error with Status set.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/scion-go/scion/api"
)

// Response bodies are read through a limit so that a misbehaving server (or
// something that is not a Hub at all) cannot make the client buffer without
// bound. Lists are paginated, so a page is far below maxResponseBody.
// They are variables only so that tests can lower them.
var (
	maxResponseBody int64 = 32 << 20
	maxErrorBody    int64 = 64 << 10
)

// DefaultUserAgent is sent unless WithUserAgent overrides it.
const DefaultUserAgent = "scion-client"

// Client calls one Hub as one caller (a bearer token: user or agent).
// It is safe for concurrent use.
type Client struct {
	base      string
	token     string
	hc        *http.Client
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client use hc (for TLS settings, proxies or a
// test transport). The default is a client with no timeout: contexts bound
// every call.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the Hub at baseURL (for example
// "https://hub.example.com"; a path prefix is kept). An empty token sends
// no Authorization header.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		base:      strings.TrimRight(baseURL, "/"),
		token:     token,
		hc:        &http.Client{},
		userAgent: DefaultUserAgent,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL is the Hub address the client talks to, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// request describes one call; the zero value of each field is the common case.
type request struct {
	method string
	path   string // below the base URL, already escaped
	query  url.Values
	body   any // JSON-encoded when non-nil
	noAuth bool
	accept string
	header http.Header // extra request headers (If-Match, say)
	// respHeader, when set, receives the response's headers (an ETag).
	respHeader *http.Header
}

// send performs r and returns the response if it is 2xx; otherwise it
// decodes the error body and closes it.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", r.method, r.path, err)
		}
		// The Hub refuses bigger bodies anyway; failing here saves the upload.
		if len(b) > api.MaxRequestBody {
			return nil, api.Errorf(api.CodeRequestTooLarge,
				"request body is %d bytes, more than the Hub accepts (%d)", len(b), api.MaxRequestBody)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	accept := r.accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", c.userAgent)
	for k, v := range r.header {
		req.Header[k] = v
	}
	if c.token != "" && !r.noAuth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if r.method != http.MethodGet && r.method != http.MethodHead {
		if k := idempotencyKey(ctx); k != "" {
			req.Header.Set(api.HeaderIdempotencyKey, k)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// do performs r and decodes a JSON response into out (when out is non-nil
// and the response has a body).
func (c *Client) do(ctx context.Context, r request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if r.respHeader != nil {
		*r.respHeader = resp.Header
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	if err != nil {
		return fmt.Errorf("client: read %s %s: %w", r.method, r.path, err)
	}
	if int64(len(b)) > maxResponseBody {
		return fmt.Errorf("client: %s %s: response larger than %d bytes", r.method, r.path, maxResponseBody)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: decode %s %s (HTTP %d): %w", r.method, r.path, resp.StatusCode, err)
	}
	return nil
}

// segment escapes one path segment; an empty one would silently address a
// different route (the collection), so it is refused.
func segment(kind, v string) (string, error) {
	if v == "" {
		return "", fmt.Errorf("client: empty %s", kind)
	}
	return url.PathEscape(v), nil
}

// apiPath joins escaped segments under the API prefix.
func apiPath(segs ...string) string { return api.Prefix + "/" + strings.Join(segs, "/") }
