// Package dbutil holds the engine-neutral helpers of store/sql, so that
// both dialects behave identically: ID generation, time normalisation, page
// limits and cursors, and the JSON encoding of list and map columns.
package dbutil

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// Page sizes: Limit <= 0 means DefaultLimit; larger limits are capped at
// MaxLimit so one request cannot pull a whole table into memory.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// ErrBadCursor is store.ErrBadCursor, returned (wrapped) for a cursor no
// list returned.
var ErrBadCursor = store.ErrBadCursor

// NewID returns a new record ID. UUIDv7 IDs sort by creation time, so
// ordering pages by ID lists records oldest first and new records land
// after every cursor already handed out.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Time normalises t to what both engines store and read back: UTC,
// truncated to the microsecond (PostgreSQL's precision), with no monotonic
// clock reading. Reads return exactly this value, so a caller's copy and a
// re-read record compare equal with ==.
func Time(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// TimePtr is Time for an optional time.
func TimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := Time(*t)
	return &n
}

// Now is the current time, normalised.
func Now() time.Time { return Time(time.Now()) }

// Limit returns the effective page size for p.
func Limit(p store.Page) int {
	switch {
	case p.Limit <= 0:
		return DefaultLimit
	case p.Limit > MaxLimit:
		return MaxLimit
	}
	return p.Limit
}

// EncodeCursor is store.EncodeCursor (kept here for the SQL engines).
func EncodeCursor(lastID string) string { return store.EncodeCursor(lastID) }

// DecodeCursor is store.DecodeCursor: the ID a cursor points after, or an
// error wrapping store.ErrBadCursor.
func DecodeCursor(c string) (string, error) { return store.DecodeCursor(c) }

// JSON encodes v for a JSON column. A nil slice or map encodes as SQL NULL
// (nil) and an empty one as "[]"/"{}", so both read back as they were.
func JSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// Strings is JSON for a string list column without the reflection for
// the common nil list (agent writes are on the Hub's hot path).
func Strings(v []string) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// UnJSON decodes a JSON column into v; NULL (nil) leaves v untouched.
func UnJSON(b []byte, v any) error {
	if b == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}

// Payload validates an agent payload and returns the value to store: nil
// (SQL NULL) for an empty payload. Invalid JSON is refused here so both
// engines agree (PostgreSQL's json type would refuse it, SQLite would not).
func Payload(p json.RawMessage) ([]byte, error) {
	if len(p) == 0 {
		return nil, nil
	}
	if !json.Valid(p) {
		return nil, errors.New("store: agent payload is not valid JSON")
	}
	return p, nil
}

// Generations returns a copy of gs with every StartedAt normalised, so
// times inside the JSON column round-trip like column times do.
func Generations(gs []api.Generation) []api.Generation {
	if gs == nil {
		return nil
	}
	out := make([]api.Generation, len(gs))
	for i, g := range gs {
		g.StartedAt = Time(g.StartedAt)
		out[i] = g
	}
	return out
}

// CheckSecret refuses a secret the engines would store differently or not
// at all: an empty name, or an empty ciphertext (SQLite would bind a nil
// one as NULL; no encryption of a value, even an empty one, is empty).
func CheckSecret(s *store.Secret) error { return CheckSecretValue(s.Name, s.Ciphertext) }

// CheckSecretValue is CheckSecret for any kind of secret (a broker's too).
func CheckSecretValue(name string, ciphertext []byte) error {
	if name == "" {
		return errors.New("empty secret name")
	}
	if len(ciphertext) == 0 {
		return errors.New("empty ciphertext")
	}
	return nil
}

// Prefixed qualifies each column of a comma-separated list with prefix
// (a table alias and a dot), for joins: Prefixed("t.", "id, name") is
// "t.id, t.name".
func Prefixed(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
