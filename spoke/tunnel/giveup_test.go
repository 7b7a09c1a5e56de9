package tunnel

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

// lateCtx has a deadline that its Done does not report yet: what a loaded
// machine shows between a deadline passing and the context's timer running.
// Its Context ends the dial for good if the Tunnel ignores the deadline.
type lateCtx struct {
	context.Context
	dl time.Time
}

func (c lateCtx) Deadline() (time.Time, bool) { return c.dl, true }

// A backoff that ends after the deadline (its timer may win the race with
// the context's on a loaded machine) must not start a new attempt, whose
// instant "i/o timeout" would bury the "connection refused" a user needs,
// nor go on retrying until the context's timer catches up.
func TestDialGivesUpAtDeadlineWithLastError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	signer, pemKey := newKey(t)
	tun, err := New(Config{Host: gone, User: "u", PrivateKey: pemKey, KnownHosts: knownHostsLine(gone, signer.PublicKey()),
		BackoffMin: 700 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	backstop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The first attempt (a refused loopback dial, well under a millisecond)
	// runs before the deadline; the backoff ends after it.
	ctx := lateCtx{Context: backstop, dl: time.Now().Add(500 * time.Millisecond)}
	start := time.Now()
	_, err = tun.DialContext(ctx, "tcp", "api:443")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("dial took %v: it waited for the context's timer, not its deadline", d)
	}
	var e *Error
	if !errors.As(err, &e) || e.Stage != StageDial || !strings.Contains(err.Error(), "refused") ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the refused dial, given up at the deadline", err)
	}
}

func TestCutShort(t *testing.T) {
	refused := &Error{Bastion: "b:22", Stage: StageDial, Err: errors.New("connect: connection refused")}
	cutDial := &Error{Bastion: "b:22", Stage: StageDial, Err: errors.New("dial tcp b:22: i/o timeout")}
	cutHandshake := &Error{Bastion: "b:22", Stage: StageHandshake, Err: context.DeadlineExceeded}
	cause := context.DeadlineExceeded
	for _, tc := range []struct {
		name          string
		attempt, last error
		want          error
	}{
		{"dial cut after a refusal: the refusal", cutDial, refused, cause},
		{"dial cut, first attempt: its own error", cutDial, nil, cutDial},
		{"handshake cut after a refusal: news", cutHandshake, refused, cutHandshake},
		{"cut waiting for another connect: the earlier error", context.DeadlineExceeded, refused, cause},
		{"cut waiting, nothing before", context.Canceled, nil, context.Canceled},
	} {
		if got := cutShort(tc.attempt, cause, tc.last); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEnded(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"no deadline", context.Background(), nil},
		{"deadline ahead", lateCtx{context.Background(), time.Now().Add(time.Hour)}, nil},
		{"deadline passed, timer not run", lateCtx{context.Background(), time.Now().Add(-time.Millisecond)}, context.DeadlineExceeded},
		{"cancelled", cancelled, context.Canceled},
	} {
		if got := ended(tc.ctx); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
