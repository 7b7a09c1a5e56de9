package wire

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// Run with: go test -run '^$' -bench . -benchmem ./wire

const benchPayload = 256

// BenchmarkRoundTrip is one Call of the echo method over loopback.
func BenchmarkRoundTrip(b *testing.B) {
	p := pair(b, Options{}, Options{}, withEcho)
	in := Echo{Data: randomBytes(benchPayload)}
	var out Echo
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.hub.Call(ctx, MethodEcho, in, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareEcho is the baseline: coder/websocket alone, the same
// payload written and echoed back, no framing, no dispatch.
func BenchmarkBareEcho(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			typ, msg, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if err := ws.Write(context.Background(), typ, msg); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	msg := randomBytes(benchPayload)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ws.Write(ctx, websocket.MessageBinary, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripParallel is 8 callers sharing one Conn.
func BenchmarkRoundTripParallel(b *testing.B) {
	p := pair(b, Options{}, Options{}, withEcho)
	in := Echo{Data: randomBytes(benchPayload)}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var out Echo
		for pb.Next() {
			if err := p.hub.Call(context.Background(), MethodEcho, in, &out); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
