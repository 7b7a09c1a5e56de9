package postgres

import "time"

// Times go in as normalised UTC (dbutil.Time); pgx reads timestamptz back
// in the local zone, so every read converts to UTC again.

func utc(t time.Time) time.Time { return t.UTC() }

// nullTime stores a zero time as NULL (e.g. a broker never seen).
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func ptrUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// jsonArg binds an encoded JSON column; nil becomes SQL NULL.
func jsonArg(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// bytesArg binds a bytea column; nil becomes SQL NULL.
func bytesArg(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
