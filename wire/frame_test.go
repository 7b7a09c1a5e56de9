package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestFrameRoundTrip(t *testing.T) {
	frames := []*Frame{
		{Kind: KindRequest, ID: 1, Method: MethodAgentCreate, Deadline: 1700000000123, Key: "k-1", Body: json.RawMessage(`{"agentId":"a"}`)},
		{Kind: KindRequest, ID: 1<<64 - 1, Method: "m\"é\n<>", Stream: true, Credit: 32},
		{Kind: KindResponse, ID: 2, Error: &api.Error{Code: api.CodeConflict, Message: "busy", Details: map[string]any{"n": 1.5}}},
		{Kind: KindChunk, ID: 3, Of: KindResponse, OfID: 9, Total: 1 << 40, Off: 12, More: true, Data: []byte{0, 1, 2, 255}},
		{Kind: KindCredit, ID: 4, Credit: 16},
		{Kind: KindEnd, ID: 5, Body: json.RawMessage(`null`)},
	}
	for _, f := range frames {
		b, err := appendFrame(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		// What we write is plain JSON that encoding/json reads the same.
		var std Frame
		if err := json.Unmarshal(b, &std); err != nil {
			t.Fatalf("%s: not JSON: %v", b, err)
		}
		got, err := decodeFrame(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(got, f) || !reflect.DeepEqual(&std, f) {
			t.Fatalf("round trip of %s:\n got %+v\n std %+v\nwant %+v", b, got, &std, f)
		}
	}
}

func TestDecodeFrameRejects(t *testing.T) {
	for _, in := range []string{
		``, `null`, `[]`, `{}`, `{"id":1}`, `{"k":"request"`, `{"k":"request"} x`,
		`{"k":"request","id":-1}`, `{"k":"request","id":1.5}`, `{"k":"request","id":18446744073709551616}`,
		`{"k":"request","id":01}`, `{"k":"request","st":1}`, `{"k":"request","b":}`, `{"k":"request","b":[1,]}`,
		`{"k":"request","x":{"a" 1}}`, `{"k":"request","m":"a` + "\x01" + `"}`, `{"k":"request","d":"!!"}`,
		`{"k":"request","err":"boom"}`, `{"k":"request","x":"\q"}`, `{"k":1}`,
		`{"k":"request","x":` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`,
	} {
		if f, err := decodeFrame([]byte(in)); err == nil {
			t.Errorf("%q: decoded as %+v, want an error", in, f)
		}
	}
}

func TestDecodeFrameAccepts(t *testing.T) {
	f, err := decodeFrame([]byte(` { "k" : "re\u0071uest" , "id" : 7 , "unknown" : {"a":[1,-2.5e3,true,null,"\"\\"]},` +
		`"m":null, "d":"AAE=", "b" : {"x": [ ] } } `))
	if err != nil {
		t.Fatal(err)
	}
	want := &Frame{Kind: KindRequest, ID: 7, Data: []byte{0, 1}, Body: json.RawMessage(`{"x": [ ] }`)}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v", f)
	}
}

func chunksOf(t *testing.T, f *Frame, chunkSize int) []*Frame {
	b, err := appendFrame(nil, f)
	if err != nil {
		t.Fatal(err)
	}
	var out []*Frame
	per := chunkPayload(chunkSize)
	for off := 0; off < len(b); off += per {
		end := min(off+per, len(b))
		out = append(out, &Frame{Kind: KindChunk, ID: 1, Of: f.Kind, OfID: f.ID, Total: int64(len(b)),
			Off: int64(off), More: end < len(b), Data: b[off:end]})
	}
	return out
}

func TestAssembler(t *testing.T) {
	big := &Frame{Kind: KindRequest, ID: 9, Method: "m", Body: json.RawMessage(`"` + strings.Repeat("x", 20000) + `"`)}
	chunks := chunksOf(t, big, minChunkSize)
	if len(chunks) < 5 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	for _, c := range chunks {
		b, _ := appendFrame(nil, c)
		if len(b) > minChunkSize {
			t.Fatalf("chunk frame of %d bytes exceeds the chunk size %d", len(b), minChunkSize)
		}
	}

	a := assembler{max: 1 << 20}
	for i, c := range chunks {
		p, err := a.add(c)
		if err != nil {
			t.Fatal(err)
		}
		if (p != nil) != (i == len(chunks)-1) {
			t.Fatalf("chunk %d: complete=%v", i, p != nil)
		}
		if p != nil {
			got, err := decodeChunked(p.buf, p.of, p.ofID)
			if err != nil || !reflect.DeepEqual(got, big) {
				t.Fatalf("reassembled %+v, %v", got, err)
			}
		}
	}
	if len(a.open) != 0 {
		t.Fatal("assembler kept state")
	}

	// Over the limit: refused once, on the first chunk, then skipped.
	a = assembler{max: 1000}
	for i, c := range chunks {
		p, err := a.add(c)
		if err != nil {
			t.Fatal(err)
		}
		if (p != nil) != (i == 0) || (p != nil && (!p.refused || p.ofID != 9 || p.of != KindRequest)) {
			t.Fatalf("chunk %d: %+v", i, p)
		}
	}
	if len(a.open) != 0 {
		t.Fatal("assembler kept state")
	}

	// Protocol violations.
	for name, seq := range map[string][]*Frame{
		"gap":            {chunks[0], chunks[2]},
		"no first":       {chunks[1]},
		"short":          {chunks[0], {Kind: KindChunk, ID: 1, Of: KindRequest, OfID: 9, Off: chunks[1].Off, Data: []byte("x")}},
		"overrun":        {{Kind: KindChunk, ID: 1, Of: KindRequest, Total: 2, Data: []byte("xyz")}},
		"bad total":      {{Kind: KindChunk, ID: 1, Of: KindRequest, Total: -1}},
		"chunk of chunk": {{Kind: KindChunk, ID: 1, Of: KindChunk, Total: 5, More: true}},
		"switched":       {chunks[0], {Kind: KindChunk, ID: 1, Of: KindResponse, OfID: 9, Off: chunks[1].Off, More: true}},
	} {
		a := assembler{max: 1 << 20}
		var err error
		for _, c := range seq {
			if _, err = a.add(c); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	// Too many messages at once.
	a = assembler{max: 1 << 20}
	var err error
	for i := 0; i <= maxAssembling && err == nil; i++ {
		_, err = a.add(&Frame{Kind: KindChunk, ID: uint64(i), Of: KindRequest, Total: 10, More: true, Data: []byte("x")})
	}
	if err == nil {
		t.Error("unbounded concurrent reassembly")
	}
}
