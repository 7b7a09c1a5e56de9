package sqlite

import (
	"database/sql"
	"time"
)

// Times are stored as INTEGER microseconds since the Unix epoch (UTC).

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullMicros stores a zero time as NULL (e.g. a broker never seen).
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func fromNullMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromMicros(n.Int64)
}

func ptrMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

func ptrFromMicros(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromMicros(n.Int64)
	return &t
}

// text binds an encoded JSON column: STRICT TEXT columns refuse the BLOB a
// []byte would bind as. nil stays NULL.
func text(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
