package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// devicePollUnit is one second of the polling interval the Hub announces
// (and of the 5 s a slow_down adds); tests shorten it.
var devicePollUnit = time.Second

// errNoOIDC means the Hub has no OIDC sign-in, so the caller may fall
// back to asking for a token.
var errNoOIDC = errors.New("the Hub has no OIDC sign-in")

// deviceSignIn runs the OIDC device flow through the Hub: it shows where
// to approve the sign-in, polls until the user has, and returns the Hub
// user token. Instructions and progress go to w (standard error).
func deviceSignIn(ctx context.Context, w io.Writer, c *client.Client) (string, error) {
	d, err := c.StartDeviceSignIn(ctx)
	if api.IsCode(err, api.CodeOIDCNotConfigured) {
		return "", errNoOIDC
	}
	if err != nil {
		return "", err
	}
	if d.VerificationURIComplete != "" {
		fmt.Fprintf(w, "Open %s and enter code %s (it may be filled in already).\n", d.VerificationURIComplete, d.UserCode)
	} else {
		fmt.Fprintf(w, "Open %s and enter code %s\n", d.VerificationURI, d.UserCode)
	}
	expires := time.Duration(d.ExpiresIn) * time.Second
	fmt.Fprintf(w, "Waiting for the sign-in to be approved (the code expires in %s; Ctrl-C to give up)", expires.Round(time.Second))
	deadline := time.Now().Add(expires)
	interval := time.Duration(max(d.Interval, 1)) * devicePollUnit
	done := func() { fmt.Fprintln(w) } // end the progress line
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			done()
			return "", ctx.Err()
		case <-t.C:
		}
		s, err := c.PollDeviceSignIn(ctx, d.DeviceCode)
		wait := interval
		switch {
		case err == nil:
			done()
			return s.Token, nil
		case api.IsCode(err, api.CodeAuthorizationPending):
			fmt.Fprint(w, ".")
		case api.IsCode(err, api.CodeSlowDown):
			interval += 5 * devicePollUnit // RFC 8628 3.5
			wait = interval
			fmt.Fprint(w, ".")
		case api.IsCode(err, api.CodeRateLimited):
			wait = max(interval, retryAfter(err))
		default:
			done()
			return "", err
		}
		if time.Now().Add(wait).After(deadline) {
			done()
			return "", api.Errorf(api.CodeExpiredToken, "the sign-in code expired before it was approved; run 'scion hub auth login' again")
		}
		t.Reset(wait)
	}
}

// retryAfter reads the retryAfter detail (seconds) of a rate_limited error.
func retryAfter(err error) time.Duration {
	var e *api.Error
	if errors.As(err, &e) {
		if v, ok := e.Details["retryAfter"].(float64); ok && v > 0 {
			return time.Duration(v * float64(time.Second))
		}
	}
	return 5 * time.Second
}

// isTerminal reports whether r is a terminal (a character device), where
// nobody is piping a token in.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
