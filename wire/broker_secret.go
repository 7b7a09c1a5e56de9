package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
)

// FetchBrokerSecret reads the value of broker-scoped secret name from the
// Hub at hubURL with a signed GET
// /api/v1/runtime-brokers/{brokerID}/secrets/{name}/value (the Hub answers
// only the broker the secret is scoped to). A Hub error comes back as an
// *api.Error. It is a variable so a broker's tests can stand in for the
// Hub; hc nil means a plain client. The call is bounded by
// brokerSecretTimeout unless ctx ends sooner.
var FetchBrokerSecret = fetchBrokerSecret

const (
	brokerSecretTimeout = 15 * time.Second
	// maxBrokerSecretAnswer bounds the answer read: a value is at most
	// api.MaxSecretValue, JSON-escaped (up to 6 bytes a byte), plus room.
	maxBrokerSecretAnswer = 6*api.MaxSecretValue + 4096
	maxBrokerErrorAnswer  = 64 << 10
)

// fetchBrokerSecret checks the name with the Hub's rule first
// (api.ValidSecretName), so the signed path is the path the Hub sees,
// with nothing to escape.
func fetchBrokerSecret(ctx context.Context, hc *http.Client, hubURL, brokerID string, secret []byte, name string) (string, error) {
	if !api.ValidSecretName(name) {
		return "", api.BadRequest("invalid secret name %s: use letters, digits and _", api.Quote(name))
	}
	if brokerID == "" || url.PathEscape(brokerID) != brokerID {
		return "", api.BadRequest("invalid runtime broker ID %s", api.Quote(brokerID))
	}
	u, err := url.Parse(strings.TrimRight(hubURL, "/"))
	if err == nil {
		// A broker's Hub endpoint may name the control channel's scheme.
		switch u.Scheme {
		case "ws":
			u.Scheme = "http"
		case "wss":
			u.Scheme = "https"
		}
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("wire: invalid Hub URL %q", hubURL)
	}
	u.Path += "/api/v1/runtime-brokers/" + brokerID + "/secrets/" + name + "/value"
	u.RawQuery, u.Fragment = "", ""
	ctx, cancel := context.WithTimeout(ctx, brokerSecretTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	SignHeaders(req.Header, brokerID, secret, SignedRequest{Method: http.MethodGet, Path: u.Path}, time.Now())
	req.Header.Set("Accept", "application/json")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("wire: fetching broker secret %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", hubAnswerError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBrokerSecretAnswer+1))
	if err != nil {
		return "", fmt.Errorf("wire: reading broker secret %s: %w", name, err)
	}
	if len(b) > maxBrokerSecretAnswer {
		return "", api.Errorf(api.CodeRequestTooLarge, "the Hub's answer for broker secret %s exceeds %d bytes", name, maxBrokerSecretAnswer)
	}
	var v api.BrokerSecretValue
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("wire: decoding broker secret %s: %w", name, err) // never the body: it may hold the value
	}
	if v.Name != name {
		return "", fmt.Errorf("wire: the Hub answered secret %s for %s", api.Quote(v.Name), name)
	}
	return v.Value, nil
}

// hubAnswerError is a non-2xx answer as an *api.Error, as the client
// package decodes it: the Hub's error body, else the status's code.
func hubAnswerError(resp *http.Response) *api.Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBrokerErrorAnswer))
	var eb api.ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		eb.Error.Status = resp.StatusCode
		return eb.Error
	}
	return &api.Error{Status: resp.StatusCode, Code: api.CodeForStatus(resp.StatusCode), Message: fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
}
