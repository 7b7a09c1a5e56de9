package broker

import "testing"

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
