package jobs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/scion-go/scion/api"
)

// Sentinels is what a Job's log said through its sentinel lines.
type Sentinels struct {
	// Result is the last result line's JSON (compacted), nil when there
	// was none or the last one was refused.
	Result json.RawMessage
	// Trace is the last complete trace block, decoded; nil when none.
	Trace []byte
	// Notes say why a result or trace was dropped, for the Job's message.
	Notes []string
}

// maxTraceEncoded bounds the base64 text of a trace block kept while
// parsing: past it the decoded trace would be over api.MaxJobTraceBytes
// anyway, so a hostile block cannot make the parser hold more.
const maxTraceEncoded = (api.MaxJobTraceBytes+2)/3*4 + 4

// ParseSentinels reads the sentinel lines of a Job's log (docs/spokes.md):
// the last `::scion-result:: <json>` line is the result, if it is valid
// JSON of at most api.MaxJobResultBytes (else no result, and a note); the
// last complete block between `::scion-trace-begin::` and
// `::scion-trace-end::` lines is the trace, base64 (padded or not, split
// over any number of lines), at most api.MaxJobTraceBytes decoded (else
// dropped with a note, as is a block that is cut short or not base64).
// Sentinels are recognised at the start of a line, after leading spaces.
func ParseSentinels(log []byte) Sentinels {
	var out Sentinels
	var result []byte // the last result line's payload
	haveResult := false
	var (
		inTrace   bool
		enc       []byte // the open block's base64, whitespace removed
		over      bool   // the open block passed maxTraceEncoded
		traceNote string // the note of the last block, "" when it was kept
		trace     []byte
	)
	forLines(log, func(line []byte) {
		t := bytes.TrimLeft(line, " \t")
		switch {
		case bytes.HasPrefix(t, []byte(SentinelTraceBegin)) && len(bytes.TrimSpace(t[len(SentinelTraceBegin):])) == 0:
			if inTrace {
				// A block opened inside another: the first was cut.
				trace, traceNote = nil, "a trace block was cut short by another: dropped"
			}
			inTrace, enc, over = true, enc[:0], false
		case bytes.HasPrefix(t, []byte(SentinelTraceEnd)) && len(bytes.TrimSpace(t[len(SentinelTraceEnd):])) == 0:
			if !inTrace {
				return
			}
			inTrace = false
			trace, traceNote = decodeTrace(enc, over)
		case inTrace:
			if over {
				return
			}
			for _, c := range bytes.TrimSpace(t) {
				if c == ' ' || c == '\t' || c == '\r' {
					continue
				}
				enc = append(enc, c)
			}
			if len(enc) > maxTraceEncoded {
				over, enc = true, enc[:0]
			}
		case bytes.HasPrefix(t, []byte(SentinelResult)):
			result, haveResult = t[len(SentinelResult):], true
		}
	})
	if inTrace {
		trace, traceNote = nil, "the trace block has no end line (the log was cut short): trace dropped"
	}
	if traceNote != "" {
		out.Notes = append(out.Notes, traceNote)
	}
	out.Trace = trace
	if haveResult {
		result = bytes.TrimSpace(result)
		switch {
		case len(result) > api.MaxJobResultBytes:
			out.Notes = append(out.Notes, fmt.Sprintf("the result line is %d bytes, over the %d-byte cap: no result", len(result), api.MaxJobResultBytes))
		case !json.Valid(result):
			out.Notes = append(out.Notes, "the result line is not valid JSON: no result")
		default:
			var b bytes.Buffer
			_ = json.Compact(&b, result) // valid JSON always compacts
			out.Result = json.RawMessage(b.Bytes())
		}
	}
	return out
}

// decodeTrace decodes one block's base64; the note says why it was dropped.
func decodeTrace(enc []byte, over bool) ([]byte, string) {
	tooBig := fmt.Sprintf("the trace is over the %d-byte cap: trace dropped", api.MaxJobTraceBytes)
	if over {
		return nil, tooBig
	}
	enc = bytes.TrimRight(enc, "=")
	if len(enc) == 0 {
		return nil, "the trace block is empty: no trace"
	}
	dec := make([]byte, base64.RawStdEncoding.DecodedLen(len(enc)))
	n, err := base64.RawStdEncoding.Decode(dec, enc)
	if err != nil {
		return nil, "the trace block is not valid base64 (garbled or cut short): trace dropped"
	}
	if n > api.MaxJobTraceBytes {
		return nil, tooBig
	}
	return dec[:n], ""
}

// forLines calls fn with each line of b, without its "\n" or "\r\n".
func forLines(b []byte, fn func(line []byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var line []byte
		if i < 0 {
			line, b = b, nil
		} else {
			line, b = b[:i], b[i+1:]
		}
		fn(bytes.TrimSuffix(line, []byte("\r")))
	}
}

// StripTrace removes trace blocks from a log (they are not for people
// to read, and would crowd the kept tail out): every line from a begin
// line through its end line, an unclosed block to the end of the log, and
// (in a tail that starts inside a block) the base64-looking lines before
// an end line that has no begin.
func StripTrace(log []byte) []byte {
	if !bytes.Contains(log, []byte("::scion-trace-")) {
		return log
	}
	out := make([]byte, 0, len(log))
	var pending [][]byte // base64-looking lines before any begin
	inTrace, seenBegin := false, false
	flush := func() {
		for _, l := range pending {
			out = append(append(out, l...), '\n')
		}
		pending = pending[:0]
	}
	forLines(log, func(line []byte) {
		t := bytes.TrimSpace(line)
		switch {
		case bytes.Equal(t, []byte(SentinelTraceBegin)):
			flush()
			inTrace, seenBegin = true, true
		case bytes.Equal(t, []byte(SentinelTraceEnd)):
			if !inTrace && !seenBegin {
				pending = pending[:0] // the tail of a block cut at the top
			}
			inTrace = false
		case inTrace:
		case !seenBegin && len(t) > 0 && isBase64Line(t):
			pending = append(pending, line)
		default:
			flush()
			out = append(append(out, line...), '\n')
		}
	})
	flush()
	if len(out) > 0 && !bytes.HasSuffix(log, []byte("\n")) {
		out = out[:len(out)-1]
	}
	return out
}

func isBase64Line(t []byte) bool {
	for _, c := range t {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// Tail is the last max bytes of log, started at a line boundary when the
// cut falls inside a line (and the line has an end within the tail).
func Tail(log []byte, max int) []byte {
	if len(log) <= max {
		return log
	}
	t := log[len(log)-max:]
	if log[len(log)-max-1] != '\n' {
		if i := bytes.IndexByte(t, '\n'); i >= 0 && i < len(t)-1 {
			t = t[i+1:]
		}
	}
	return t
}
