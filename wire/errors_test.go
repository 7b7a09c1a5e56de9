package wire

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// A peer's error reaches the caller with the status the peer sent, on a
// call and on a stream: a broker's 501 stays 501 and a 410 stays 410 even
// for a code this side's table has another status for, or none (a newer
// peer's code would otherwise answer 500).
func TestPeerStatusCrossesTheChannel(t *testing.T) {
	newer := &api.Error{Status: http.StatusGone, Code: "session_expired", Message: "a newer broker's code"}
	p := pair(t, Options{}, Options{}, func(c *Conn, hub bool) {
		if hub {
			return
		}
		c.Handle("unsupported", func(context.Context, *Request) (any, error) {
			return nil, api.Errorf(api.CodeUnsupportedOperation, "suspend is not supported by the kubernetes runtime")
		})
		c.Handle("newer", func(context.Context, *Request) (any, error) { return nil, newer })
		c.HandleStream("stream", func(context.Context, *Request, func(any) error) error {
			return api.Errorf(api.CodeAttachClosed, "the attachment is closed")
		})
	})
	ctx := context.Background()
	check := func(err error, status int, code string) {
		t.Helper()
		var e *api.Error
		if !errors.As(err, &e) || e.Status != status || e.Code != code || !e.FromPeer {
			t.Fatalf("got %T %+v, want %d %s from the peer", err, err, status, code)
		}
	}
	check(p.hub.Call(ctx, "unsupported", nil, nil), http.StatusNotImplemented, api.CodeUnsupportedOperation)
	check(p.hub.Call(ctx, "newer", nil, nil), http.StatusGone, "session_expired")
	s, err := p.hub.Stream(ctx, "stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	var item any
	check(s.Recv(&item), http.StatusGone, api.CodeAttachClosed)
}

// The status is a field of the frame's error; a frame without one (a peer
// that predates it) or with a status that is no error status gets the
// code's status from the table.
func TestFrameErrorStatus(t *testing.T) {
	b, err := appendFrame(nil, &Frame{Kind: KindResponse, ID: 7, Error: api.Errorf(api.CodeUnsupportedOperation, "no")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"err":{"code":"unsupported_operation","message":"no","status":501}`) {
		t.Fatalf("encoded %s", b)
	}
	f, err := decodeFrame(b)
	if err != nil || fromPeer(f.Error).Status != http.StatusNotImplemented {
		t.Fatalf("decoded %+v, %v", f, err)
	}
	for in, want := range map[string]int{
		`{"k":"response","id":1,"err":{"code":"runtime_broker_timeout","message":"late"}}`:        http.StatusGatewayTimeout,
		`{"k":"response","id":1,"err":{"code":"agent_not_found","message":"gone","status":200}}`:  http.StatusNotFound,
		`{"k":"response","id":1,"err":{"code":"some_future_code","message":"?"}}`:                 http.StatusInternalServerError,
		`{"k":"end","id":1,"err":{"code":"unsupported_operation","message":"no","status":501}}`:   http.StatusNotImplemented,
		`{"k":"response","id":1,"err":{"code":"runtime_error","message":"no exec","status":501}}`: http.StatusNotImplemented,
	} {
		f, err := decodeFrame([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := fromPeer(f.Error).Status; got != want {
			t.Errorf("%s: status %d, want %d", in, got, want)
		}
	}
}
