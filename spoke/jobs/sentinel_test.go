package jobs

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// b64Lines is data as base64 in lines of 76 characters.
func b64Lines(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\n")
	return b.String()
}

func TestParseSentinels(t *testing.T) {
	traceData := []byte("trace\x00bytes\xff")
	block := SentinelTraceBegin + "\n" + b64Lines(traceData) + SentinelTraceEnd + "\n"
	bigResult := `{"x":"` + strings.Repeat("a", api.MaxJobResultBytes) + `"}`
	for _, tc := range []struct {
		name       string
		log        string
		wantResult string // "" none
		wantTrace  []byte
		wantNote   string // in a note; "" no notes
	}{
		{"none", "hello\nworld\n", "", nil, ""},
		{"empty log", "", "", nil, ""},
		{"result", "step 1\n::scion-result:: {\"loss\": 0.12}\n", `{"loss":0.12}`, nil, ""},
		{"result without newline at the end", "::scion-result:: [1, 2]", `[1,2]`, nil, ""},
		{"result with crlf and indent", "  ::scion-result:: {\"a\":1}\r\n", `{"a":1}`, nil, ""},
		{"the last result wins", "::scion-result:: 1\n::scion-result:: 2\nmore\n", `2`, nil, ""},
		{"many result lines", strings.Repeat("::scion-result:: {\"i\":0}\n", 10000) + "::scion-result:: {\"i\":1}\n", `{"i":1}`, nil, ""},
		{"an invalid last result drops the result", "::scion-result:: 1\n::scion-result:: {oops\n", "", nil, "not valid JSON"},
		{"an empty result", "::scion-result::\n", "", nil, "not valid JSON"},
		{"an oversize result", "::scion-result:: " + bigResult + "\n", "", nil, "over the"},
		{"a result in the middle of a line is not one", "echo ::scion-result:: 1\n", "", nil, ""},
		{"trace", "a\n" + block + "b\n", "", traceData, ""},
		{"trace unpadded", SentinelTraceBegin + "\n" + base64.RawStdEncoding.EncodeToString([]byte("ab")) + "\n" + SentinelTraceEnd + "\n", "", []byte("ab"), ""},
		{"trace and result", block + "::scion-result:: {}\n", "{}", traceData, ""},
		{"the last trace wins", SentinelTraceBegin + "\n" + b64Lines([]byte("one")) + SentinelTraceEnd + "\n" + block, "", traceData, ""},
		{"trace with no end", "a\n" + SentinelTraceBegin + "\n" + b64Lines(traceData), "", nil, "no end line"},
		{"trace cut by another begin", SentinelTraceBegin + "\nQUJD\n" + block, "", traceData, ""},
		{"invalid base64", SentinelTraceBegin + "\n!!!not base64!!!\n" + SentinelTraceEnd + "\n", "", nil, "not valid base64"},
		{"garbled base64 (a lost line)", SentinelTraceBegin + "\nQUJDR\n" + SentinelTraceEnd + "\n", "", nil, "not valid base64"},
		{"padding in the middle", SentinelTraceBegin + "\nQQ==\nQQ==\n" + SentinelTraceEnd + "\n", "", nil, "not valid base64"},
		{"empty trace block", SentinelTraceBegin + "\n" + SentinelTraceEnd + "\n", "", nil, "empty"},
		{"an end with no begin is ignored", SentinelTraceEnd + "\n", "", nil, ""},
		{"oversize trace", SentinelTraceBegin + "\n" + b64Lines(make([]byte, api.MaxJobTraceBytes+1)) + SentinelTraceEnd + "\n", "", nil, "over the"},
		{"trace at the cap", SentinelTraceBegin + "\n" + b64Lines(bytes.Repeat([]byte{7}, api.MaxJobTraceBytes)) + SentinelTraceEnd + "\n", "", bytes.Repeat([]byte{7}, api.MaxJobTraceBytes), ""},
		{"a huge line", strings.Repeat("x", 8<<20) + "\n::scion-result:: true\n", "true", nil, ""},
		{"a huge line inside a trace block", SentinelTraceBegin + "\n" + strings.Repeat("A", 8<<20) + "\n" + SentinelTraceEnd + "\n", "", nil, "over the"},
		{"a result line inside a trace block is trace", SentinelTraceBegin + "\n::scion-result:: 1\n" + SentinelTraceEnd + "\n", "", nil, "not valid base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseSentinels([]byte(tc.log))
			if string(got.Result) != tc.wantResult {
				t.Errorf("result %.80q, want %q", got.Result, tc.wantResult)
			}
			if !bytes.Equal(got.Trace, tc.wantTrace) || (got.Trace == nil) != (tc.wantTrace == nil) {
				t.Errorf("trace %d bytes %.40q, want %d bytes", len(got.Trace), got.Trace, len(tc.wantTrace))
			}
			notes := strings.Join(got.Notes, "; ")
			if tc.wantNote == "" && notes != "" || !strings.Contains(notes, tc.wantNote) {
				t.Errorf("notes %q, want %q", notes, tc.wantNote)
			}
		})
	}
}

func TestStripTrace(t *testing.T) {
	block := SentinelTraceBegin + "\nQUJD\nREVG\n" + SentinelTraceEnd + "\n"
	for _, tc := range []struct{ name, log, want string }{
		{"no trace", "a\nb\n", "a\nb\n"},
		{"a block", "a\n" + block + "b\n", "a\nb\n"},
		{"two blocks", block + "a\n" + block, "a\n"},
		{"an open block at the end", "a\n" + SentinelTraceBegin + "\nQUJD\n", "a\n"},
		{"a tail that starts inside a block", "QUJD\nREVG\n" + SentinelTraceEnd + "\nafter\n", "after\n"},
		{"words before an unmatched end are kept", "hello there\n" + SentinelTraceEnd + "\nx\n", "hello there\nx\n"},
		{"no newline at the end", "a\n" + block + "b", "a\nb"},
		{"result lines stay", "::scion-result:: 1\n" + block, "::scion-result:: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(StripTrace([]byte(tc.log))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		log  string
		max  int
		want string
	}{
		{"abc\n", 10, "abc\n"},
		{"line1\nline2\nline3\n", 8, "line3\n"},
		{"line1\nline2\nline3\n", 12, "line2\nline3\n"},
		{"xxxxxxxxxxxxxxxx", 4, "xxxx"},           // one long line: cut inside it
		{"aaaa\nbbbbbbbbbb\n", 6, "bbbbb\n"[0:6]}, // no line end inside the tail but the last
	} {
		if got := string(Tail([]byte(tc.log), tc.max)); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.log, tc.max, got, tc.want)
		}
	}
}
