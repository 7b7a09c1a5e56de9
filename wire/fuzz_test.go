package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeFrame feeds hostile input to the frame decoder and the chunk
// reassembler. The input is a sequence of frames separated by newlines (our
// encoder never writes a raw newline). Seeds are in
// testdata/fuzz/FuzzDecodeFrame; go test runs them, go test -fuzz explores.
func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"k":"request","id":1,"m":"echo","dl":1700000000000,"b":{"data":"aGk="}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 12
		a := assembler{max: limit}
		for _, msg := range bytes.Split(data, []byte{'\n'}) {
			fr, err := decodeFrame(msg)
			if err != nil {
				continue
			}
			// Never laxer than JSON itself.
			if !json.Valid(msg) {
				t.Fatalf("accepted invalid JSON %q", msg)
			}
			// What we decode, we encode to something that decodes to the
			// same frame.
			b1, err := appendFrame(nil, fr)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", fr, err)
			}
			fr2, err := decodeFrame(b1)
			if err != nil {
				t.Fatalf("decode of re-encoded %q: %v", b1, err)
			}
			if b2, _ := appendFrame(nil, fr2); !bytes.Equal(b1, b2) {
				t.Fatalf("unstable encoding:\n%q\n%q", b1, b2)
			}
			if fr.Kind != KindChunk {
				continue
			}
			p, err := a.add(fr)
			if err != nil {
				a = assembler{max: limit} // the connection would end here
				continue
			}
			if p != nil && !p.refused {
				if int64(len(p.buf)) > limit {
					t.Fatalf("reassembled %d bytes, limit %d", len(p.buf), limit)
				}
				_, _ = decodeChunked(p.buf, p.of, p.ofID)
			}
			// Buffered memory is bounded by what arrived.
			var held int
			for _, q := range a.open {
				held += len(q.buf)
			}
			if held > len(data) {
				t.Fatalf("holding %d bytes from %d of input", held, len(data))
			}
		}
	})
}
