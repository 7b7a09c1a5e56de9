package api

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Bounds of free-text inputs the Hub stores and hands to brokers. They are
// far above any real value and far below what would let one request bloat
// every list and every dispatch of a record.
const (
	// MaxGitRemoteLen bounds a project's git remote (URLs, scp-style
	// git@host:path).
	MaxGitRemoteLen = 2048
	// MaxImageLen bounds an image reference.
	MaxImageLen = 512
	// MaxRefLen bounds a reference to a record by name or ID.
	MaxRefLen = 128
)

// CheckText refuses v when it is longer than max bytes, is not UTF-8 or
// holds a control character (CR, LF, NUL, ESC, DEL, C1, ...): such a
// value is a header or log injection, or breaks a command line or a
// table, wherever it is used later. field names the input in the 400.
// An empty v is accepted; whether the field is required is the caller's
// business.
func CheckText(field, v string, max int) error {
	if len(v) > max {
		return BadRequest("%s is too long: %d bytes, at most %d", field, len(v), max)
	}
	if !utf8.ValidString(v) {
		return BadRequest("%s is not valid UTF-8", field)
	}
	for i, r := range v {
		if unicode.IsControl(r) {
			return BadRequest("%s holds a control character (%U) at byte %d", field, r, i)
		}
	}
	return nil
}

// CheckGitRemoteText is the generic part of checking a git remote: bounded
// and free of control characters (a CR/LF in a remote is a second line in
// git's config or a forged log line). Which transports are allowed is a
// separate decision.
func CheckGitRemoteText(remote string) error {
	return CheckText("gitRemote", remote, MaxGitRemoteLen)
}

// Quote renders a caller's input for an error message: Go-quoted (control
// characters escaped) and cut to 64 bytes, so a refusal never echoes a
// 100 kB value.
func Quote(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}
