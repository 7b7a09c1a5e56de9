package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/scion-go/scion/api"
)

// Kind says what a frame is.
type Kind string

// Frame kinds. Request and cancel carry an ID from the sender's own counter;
// response, item, end and credit carry the ID of a request the receiver
// sent earlier (credit: the sender of the credit is the stream's caller, so
// its ID is in the stream handler's incoming table). Chunk frames carry a
// third counter of their own.
const (
	KindRequest  Kind = "request"
	KindResponse Kind = "response"
	KindCancel   Kind = "cancel"
	KindItem     Kind = "item"   // one stream item
	KindEnd      Kind = "end"    // end of a stream, with Error if it failed
	KindChunk    Kind = "chunk"  // a piece of a frame too big for one message
	KindCredit   Kind = "credit" // stream flow control: Credit more items may be sent
)

// Frame is one WebSocket text message of the control channel. Field names
// on the wire are short because every frame carries them.
type Frame struct {
	Kind Kind   `json:"k"`
	ID   uint64 `json:"id"`
	// Request fields.
	Method   string `json:"m,omitempty"`
	Deadline int64  `json:"dl,omitempty"` // unix milliseconds; 0 means none
	Key      string `json:"key,omitempty"`
	Stream   bool   `json:"st,omitempty"`
	// Credit is, on a stream request, the caller's window (items it buffers)
	// and, on a credit frame, how many more items may be sent.
	Credit int64 `json:"cr,omitempty"`
	// Error is a failed response or stream; on the wire it is a
	// peerError, the API's error with its HTTP status.
	Error *api.Error `json:"err,omitempty"`
	// Chunk fields: the frame being carried (Of, OfID), its encoded size,
	// this piece's offset in it, whether more pieces follow, the piece.
	Of    Kind   `json:"of,omitempty"`
	OfID  uint64 `json:"ofid,omitempty"`
	Total int64  `json:"tot,omitempty"`
	Off   int64  `json:"off,omitempty"`
	More  bool   `json:"more,omitempty"`
	Data  []byte `json:"d,omitempty"`
	// Body is last so that appendFrame can copy it without re-encoding.
	Body json.RawMessage `json:"b,omitempty"`
}

// appendFrame appends the JSON encoding of f to b. It writes the fields by
// hand rather than through encoding/json: a round trip encodes several
// frames, and json.Marshal would re-validate and re-compact Body (already
// valid JSON we produced) on every one of them.
func appendFrame(b []byte, f *Frame) ([]byte, error) {
	b, err := appendHead(b, f)
	if err != nil {
		return b, err
	}
	if len(f.Body) > 0 {
		b = append(b, `,"b":`...)
		b = append(b, f.Body...)
	}
	return append(b, '}'), nil
}

// appendFrameJSON is appendFrame with the JSON encoding of v as the body
// (none if v is nil), encoded straight into b rather than into a body of
// its own first. f.Body is ignored. An error encoding v leaves b as it was.
func appendFrameJSON(b []byte, f *Frame, v any) ([]byte, error) {
	n := len(b)
	b, err := appendHead(b, f)
	if err != nil {
		return b[:n], err
	}
	if v != nil {
		b = append(b, `,"b":`...)
		if b, err = appendJSON(b, v); err != nil {
			return b[:n], err
		}
	}
	return append(b, '}'), nil
}

// appendHead appends every field of f but Body, without the closing brace.
func appendHead(b []byte, f *Frame) ([]byte, error) {
	b = append(b, `{"k":`...)
	b = appendString(b, string(f.Kind))
	b = append(b, `,"id":`...)
	b = strconv.AppendUint(b, f.ID, 10)
	if f.Method != "" {
		b = append(b, `,"m":`...)
		b = appendString(b, f.Method)
	}
	if f.Deadline != 0 {
		b = append(b, `,"dl":`...)
		b = strconv.AppendInt(b, f.Deadline, 10)
	}
	if f.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, f.Key)
	}
	if f.Stream {
		b = append(b, `,"st":true`...)
	}
	if f.Credit != 0 {
		b = append(b, `,"cr":`...)
		b = strconv.AppendInt(b, f.Credit, 10)
	}
	if f.Error != nil {
		e, err := json.Marshal(toPeer(f.Error))
		if err != nil {
			return b, fmt.Errorf("wire: encode error: %w", err)
		}
		b = append(b, `,"err":`...)
		b = append(b, e...)
	}
	if f.Of != "" {
		b = append(b, `,"of":`...)
		b = appendString(b, string(f.Of))
		b = append(b, `,"ofid":`...)
		b = strconv.AppendUint(b, f.OfID, 10)
	}
	if f.Total != 0 {
		b = append(b, `,"tot":`...)
		b = strconv.AppendInt(b, f.Total, 10)
	}
	if f.Off != 0 {
		b = append(b, `,"off":`...)
		b = strconv.AppendInt(b, f.Off, 10)
	}
	if f.More {
		b = append(b, `,"more":true`...)
	}
	if len(f.Data) > 0 {
		b = append(b, `,"d":"`...)
		b = base64.StdEncoding.AppendEncode(b, f.Data)
		b = append(b, '"')
	}
	return b, nil
}

// jsonAppender is a json.Encoder that appends to a slice. Encoding a body
// through it is json.Marshal without the copy of the result Marshal
// allocates; the output is the same (Encode adds only a newline).
type jsonAppender struct {
	b   []byte
	enc *json.Encoder
}

func (a *jsonAppender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

var appenders = sync.Pool{New: func() any {
	a := new(jsonAppender)
	a.enc = json.NewEncoder(a)
	return a
}}

// appendJSON appends the JSON encoding of v to b, as json.Marshal has it.
func appendJSON(b []byte, v any) ([]byte, error) {
	a := appenders.Get().(*jsonAppender)
	a.b = b
	err := a.enc.Encode(v)
	b = a.b
	a.b = nil
	appenders.Put(a)
	if err != nil {
		return b, err
	}
	return b[:len(b)-1], nil // Encode's newline
}

// appendString appends s as a JSON string. Methods, keys and kinds are
// plain ASCII in practice, so the common case is a straight copy; anything
// else goes through encoding/json for correct escaping.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
