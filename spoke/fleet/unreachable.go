package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
)

// UnreachableError is a spoke that did not answer: the typed error the
// asking agent sees as {"status":"error","cluster":...,"tier":...,
// "message":...}, naming the spoke and its tier, so that a far path's
// failure is never taken for a local one and never waits forever.
type UnreachableError struct {
	Cluster string
	Tier    Tier
	Message string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("spoke %s (%s tier) unreachable: %s", e.Cluster, e.Tier, e.Message)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// MarshalJSON is the agent-facing shape.
func (e *UnreachableError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Status  string `json:"status"`
		Cluster string `json:"cluster"`
		Tier    Tier   `json:"tier"`
		Message string `json:"message"`
	}{"error", e.Cluster, e.Tier, e.Message})
}

// unreachableRT bounds each request by timeout and turns every transport
// failure (dial, proxy, tunnel, TLS, no answer in time) into an
// UnreachableError; answers, whatever their status, pass. The bound is
// here and not http.Client.Timeout: the client replaces the error of a
// timed-out request with its own, untyped one.
type unreachableRT struct {
	next    http.RoundTripper
	cluster string
	tier    Tier
	timeout time.Duration
}

func (u *unreachableRT) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(r.Context(), u.timeout)
	resp, err := u.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		msg := api.RedactURLs(err.Error()) // a proxy's or server's userinfo
		if ctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil {
			msg = fmt.Sprintf("no answer within the request timeout %v: %v", u.timeout, err)
		}
		return nil, &UnreachableError{Cluster: u.cluster, Tier: u.tier, Message: msg, Err: err}
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody ends the request's timeout when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
