package wire

import (
	"encoding/json"
	"testing"
)

// BenchmarkCodec is the CPU cost of one echo round trip's encoding and
// decoding, without I/O: the request and response bodies (user JSON) and
// the frames around them.
func BenchmarkCodec(b *testing.B) {
	in := Echo{Data: randomBytes(benchPayload)}
	body, _ := json.Marshal(in)
	var buf []byte
	b.Run("frames", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf, _ = appendFrame(buf[:0], &Frame{Kind: KindRequest, ID: 7, Method: MethodEcho, Deadline: 1700000000000, Body: body})
			f, _ := decodeFrame(buf)
			buf, _ = appendFrame(buf[:0], &Frame{Kind: KindResponse, ID: 7, Body: f.Body})
			_, _ = decodeFrame(buf)
		}
	})
	b.Run("bodies", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var e Echo
			body, _ := json.Marshal(in)
			_ = json.Unmarshal(body, &e)
			out, _ := json.Marshal(e)
			_ = json.Unmarshal(out, &e)
		}
	})
}
