package broker

import (
	"strings"
	"testing"
)

func TestCompleteUTF8(t *testing.T) {
	euro := "€" // 3 bytes
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"a" + euro, 4},
		{"a" + euro[:1], 1},
		{"a" + euro[:2], 1},
		{"a\xff", 2}, // invalid bytes are passed on, not held back
		{"\x80\x80\x80\x80", 4},
	} {
		if got := completeUTF8([]byte(tc.in)); got != tc.want {
			t.Errorf("completeUTF8(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc\n", 5, "a\nb\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\n\n\nb\n", 3, "\n\nb\n"},
		{strings.Repeat("x", 100000) + "\nend\n", 1, "end\n"},
	} {
		got, err := lastLines(strings.NewReader(tc.in), tc.n)
		if err != nil || string(got) != tc.want {
			t.Errorf("lastLines(%.20q, %d) = %.20q, %v; want %.20q", tc.in, tc.n, got, err, tc.want)
		}
	}
}
