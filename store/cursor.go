package store

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// ErrBadCursor is returned (wrapped) for a page cursor no list returned.
// The Hub answers it with 400: a garbage cursor must not read as an empty
// last page, or a client would stop early believing it saw everything.
var ErrBadCursor = errors.New("invalid page cursor")

// maxCursorID bounds the ID inside a cursor; record IDs are UUIDs.
const maxCursorID = 128

// EncodeCursor makes the opaque cursor for a page ending at the record
// lastID. The cursor is the ID itself, base64url-encoded so clients treat
// it as opaque and its content can change later.
func EncodeCursor(lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastID))
}

// DecodeCursor returns the ID a cursor points after ("" for the first
// page). Only what EncodeCursor can have made is accepted: canonical
// base64url of a record-ID-shaped string (letters, digits, '-', '_', '.',
// ':'). Most strings are valid base64 of something, so decoding alone
// would let "garbage" through as a cursor past every record.
func DecodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	if err != nil || len(b) == 0 || len(b) > maxCursorID || !idShaped(b) {
		return "", fmt.Errorf("%w: the cursor must be a nextCursor a list returned", ErrBadCursor)
	}
	return string(b), nil
}

func idShaped(b []byte) bool {
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}
