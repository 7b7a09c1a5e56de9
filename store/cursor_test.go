package store

import (
	"errors"
	"testing"
)

func TestDecodeCursor(t *testing.T) {
	for _, id := range []string{"01890000-0000-7000-8000-000000000000", "sparse", "named-like-id", "a_b.c:d"} {
		got, err := DecodeCursor(EncodeCursor(id))
		if err != nil || got != id {
			t.Errorf("round trip of %q: %q, %v", id, got, err)
		}
	}
	if got, err := DecodeCursor(""); got != "" || err != nil {
		t.Errorf("empty cursor: %q, %v; want the first page", got, err)
	}
	for _, c := range []string{
		"garbage",            // valid base64 of non-ID bytes
		"%%% not a cursor",   // not base64
		"AAAA",               // NUL bytes
		EncodeCursor("a b"),  // a space is in no ID
		EncodeCursor("a\nb"), // nor a control character
		EncodeCursor("é"),    // nor non-ASCII
		"cHJvamVjdA==",       // padded: EncodeCursor never pads
		"cHJvamVjdB",         // non-canonical trailing bits ("project" is cHJvamVjdA)
		EncodeCursor(string(make([]byte, 129))),
	} {
		if _, err := DecodeCursor(c); !errors.Is(err, ErrBadCursor) {
			t.Errorf("DecodeCursor(%q) = %v, want ErrBadCursor", c, err)
		}
	}
}
