package dbutil

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

func TestLimit(t *testing.T) {
	for in, want := range map[int]int{-5: 100, 0: 100, 1: 1, 100: 100, 1000: 1000, 1001: 1000} {
		if got := Limit(store.Page{Limit: in}); got != want {
			t.Errorf("Limit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestCursor(t *testing.T) {
	// Every ID a record can have round-trips, through a URL-safe cursor.
	for _, id := range []string{"0190f0c4-7b8e-7c3a-9d2e-1f2a3b4c5d6e", "a", "with-dash_and.dot:colon"} {
		c := EncodeCursor(id)
		if strings.ContainsAny(c, "+/= ") {
			t.Errorf("cursor %q of %q is not URL-safe", c, id)
		}
		got, err := DecodeCursor(c)
		if err != nil || got != id {
			t.Errorf("round trip of %q: %q, %v", id, got, err)
		}
	}
	// A string no record ID has (a space, a slash) is no cursor a list
	// returned: refused, not read as a page past everything.
	if _, err := DecodeCursor(EncodeCursor("with space/and+slash")); !errors.Is(err, ErrBadCursor) {
		t.Errorf("cursor of a non-ID: %v, want ErrBadCursor", err)
	}
	if got, err := DecodeCursor(""); err != nil || got != "" {
		t.Errorf(`DecodeCursor("") = %q, %v`, got, err)
	}
	for _, bad := range []string{"!!!", "a=b", "ab=="} {
		if _, err := DecodeCursor(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("DecodeCursor(%q) error = %v, want ErrBadCursor", bad, err)
		}
	}
}

func TestTime(t *testing.T) {
	loc := time.FixedZone("X", -7*3600)
	in := time.Date(2025, 1, 2, 3, 4, 5, 123456789, loc)
	got := Time(in)
	want := time.Date(2025, 1, 2, 10, 4, 5, 123456000, time.UTC)
	if got != want {
		t.Fatalf("Time = %v, want %v", got, want)
	}
	if Time(time.Time{}) != (time.Time{}) {
		t.Fatal("zero time not kept zero")
	}
}

func TestJSON(t *testing.T) {
	var nilSlice []string
	if b, err := JSON(nilSlice); err != nil || b != nil {
		t.Fatalf("JSON(nil slice) = %q, %v; want nil (SQL NULL)", b, err)
	}
	if b, err := JSON([]string{}); err != nil || string(b) != "[]" {
		t.Fatalf("JSON(empty) = %q, %v", b, err)
	}
	var out []string
	if err := UnJSON(nil, &out); err != nil || out != nil {
		t.Fatalf("UnJSON(NULL) = %v, %v", out, err)
	}
	if _, err := Payload([]byte("{")); err == nil {
		t.Fatal("Payload accepted invalid JSON")
	}
	if p, err := Payload(nil); err != nil || p != nil {
		t.Fatalf("Payload(nil) = %q, %v", p, err)
	}
}

func TestPrefixed(t *testing.T) {
	if got := Prefixed("t.", "id, hash,kind"); got != "t.id, t.hash, t.kind" {
		t.Fatalf("Prefixed = %q", got)
	}
}
