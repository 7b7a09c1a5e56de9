// Package sqlstore is the one SQL implementation of store.Store. Every
// query and all shared logic (normalisation, scanners, filters, the queue,
// reservations, tokens, secrets, settings, nonces, idempotency records) are
// written here once, against a Dialect that holds only what differs between
// engines: how to reach the database, how errors and types map, and how
// the agent writes bound by a broker's capacity run (AgentWrites: each
// engine's own statements, one write path per operation). The Store has
// no branch on the engine. store/sqlite and store/postgres are dialects.
//
// Queries are written in PostgreSQL's syntax ($N placeholders, ::type
// casts, row-lock clauses); a dialect for another engine rewrites the text
// (SQLite's drops casts and lock clauses: it serialises every write).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// Querier runs statements: the engine's pool, its connection or a
// transaction. Exec returns the number of rows affected.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Row is one result row; a missing row is an error wrapping sql.ErrNoRows.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Dialect is what differs between engines.
type Dialect interface {
	// Reader runs single-statement reads, Writer single-statement writes
	// (each commits on its own).
	Reader() Querier
	Writer() Querier
	// Tx runs fn in a write transaction and commits it if fn returns nil.
	Tx(ctx context.Context, fn func(Querier) error) error
	// Snapshot runs fn in a read-only transaction that sees one snapshot.
	Snapshot(ctx context.Context, fn func(Querier) error) error
	// Classify returns the store error err is (an error wrapping
	// store.ErrAlreadyExists for a unique violation, store.ErrNotFound for
	// a missing referenced row, ...), or nil for any other error.
	Classify(err error) error
	// Time is the argument for a time column; ScanTime the destination
	// that reads one back (UTC; NULL reads as the zero time).
	Time(t time.Time) any
	ScanTime(dst *time.Time) any
	// JSON is the argument for an encoded JSON column (nil: NULL).
	JSON(b []byte) any
	Ping(ctx context.Context) error
	Close() error
	AgentWrites
}

// AgentWrites are the agent writes that must be atomic with a broker's
// capacity. Each engine runs them its own way, with its own statements
// (as a dialect holds its own in temporal's sqlplugin): SQLite in one
// transaction under its single writer, PostgreSQL in one pipelined batch
// under a lock on the broker's row, because its writers run concurrently
// and a count taken without the lock could let two creates past a limit.
// The Store prepares what they write and the errors they answer; a
// dialect never decides what an agent is, only how its rows are written.
type AgentWrites interface {
	// CreateAgent runs c (see AgentCreate) in one transaction and reports
	// whether it made the provider link.
	CreateAgent(ctx context.Context, c *AgentCreate) (linked bool, err error)
	// UpdateAgent runs u (see AgentUpdate); updated is false, and nothing
	// is written, when its update matched no row (the Store then tells
	// why).
	UpdateAgent(ctx context.Context, u *AgentUpdate) (updated bool, err error)
	// Reserve is store.Store's Reserve at now.
	Reserve(ctx context.Context, brokerID, agentID string, limit int, now time.Time) error
	// DeleteAgent deletes the agent, its reservation (by cascade) and its
	// agent tokens; false if there was no such agent.
	DeleteAgent(ctx context.Context, id string) (bool, error)
}

// Store is a store.Store over a Dialect.
type Store struct {
	d    Dialect
	r, w Querier
}

var _ store.Store = (*Store)(nil)

// New returns the Store over d, whose schema must be up to date.
func New(d Dialect) *Store { return &Store{d: d, r: d.Reader(), w: d.Writer()} }

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.d.Ping(ctx) }

// Close closes the database. It is safe to call more than once.
func (s *Store) Close() error { return s.d.Close() }

// MapErr turns a driver error into the store's errors (through classify),
// wrapped with what failed so messages stay useful.
func MapErr(classify func(error) error, err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	if c := classify(err); c != nil {
		return fmt.Errorf("%s: %w", what, c)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (s *Store) mapErr(err error, what string) error { return MapErr(s.d.Classify, err, what) }

// mustAffect returns ErrNotFound when an UPDATE or DELETE hit no row.
func (s *Store) mustAffect(n int64, err error, what string) error {
	if err != nil {
		return s.mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}

// stamp fills in a new record's ID and creation time when they are empty
// and normalises its times; updated (when not nil) defaults to created.
func stamp(id *string, created, updated *time.Time) {
	if *id == "" {
		*id = dbutil.NewID()
	}
	if created.IsZero() {
		*created = dbutil.Now()
	}
	*created = dbutil.Time(*created)
	if updated != nil {
		if updated.IsZero() {
			*updated = *created
		}
		*updated = dbutil.Time(*updated)
	}
}

// nullTime binds a zero time as NULL (e.g. a broker never seen).
func (s *Store) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.d.Time(t)
}

// ptrTime binds an optional time; nil is NULL. A set time is stored as
// it is, the zero time included (a token revoked at it stays revoked).
func (s *Store) ptrTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.d.Time(*t)
}

// scanPtrTime is the destination that reads what ptrTime stored back:
// nil for NULL, a pointer to the time (zero or not) otherwise.
func (s *Store) scanPtrTime(dst **time.Time) any { return &ptrTimeDest{d: s.d, dst: dst} }

type ptrTimeDest struct {
	d   Dialect
	dst **time.Time
}

func (p *ptrTimeDest) Scan(src any) error {
	if src == nil {
		*p.dst = nil
		return nil
	}
	var t time.Time
	if v, ok := src.(time.Time); ok { // a driver that decodes times itself
		t = v.UTC()
	} else {
		sc, ok := p.d.ScanTime(&t).(sql.Scanner)
		if !ok {
			return fmt.Errorf("optional time column holds %T", src)
		}
		if err := sc.Scan(src); err != nil {
			return err
		}
	}
	*p.dst = &t
	return nil
}

// collect scans every row of a query with scan; never nil.
func collect[T any](rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanString(r Row) (s string, err error) { return s, r.Scan(&s) }

func (s *Store) strings(ctx context.Context, what, query string, args ...any) ([]string, error) {
	rows, err := s.r.Query(ctx, query, args...)
	ids, err := collect(rows, err, scanString)
	return ids, s.mapErr(err, what)
}

// filter is one "column = value" condition of a list, or, when in is
// not nil, "column IN (in...)" (an empty in matches nothing).
type filter struct {
	col string
	val any
	in  []string
}

// list returns one page of table, in ID order, and the size of the whole
// filtered set, both read from one snapshot.
//
// Keyset pagination: the cursor is the last ID returned and the next page
// is "id > cursor", so a client following cursors sees each row once and
// terminates even while rows are inserted or deleted. One extra row is
// fetched to learn whether there is a next page, so the last page never
// hands out a cursor to an empty page.
func list[T any](ctx context.Context, s *Store, what, table, cols string, filters []filter, page store.Page,
	scan func(Row) (T, error), id func(T) string) ([]T, string, int, error) {
	after, err := dbutil.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", 0, s.mapErr(err, what)
	}
	limit := dbutil.Limit(page)
	var where string
	var args []any
	cond := func(c string, v any) {
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		args = append(args, v)
		where += fmt.Sprintf("%s $%d", c, len(args))
	}
	for _, f := range filters {
		if f.in == nil {
			cond(f.col+" =", f.val)
			continue
		}
		marks := make([]string, len(f.in))
		for i, v := range f.in {
			args = append(args, v)
			marks[i] = fmt.Sprintf("$%d", len(args))
		}
		if where == "" {
			where = " WHERE "
		} else {
			where += " AND "
		}
		if len(marks) == 0 {
			where += "1 = 0" // "IN ()" is not SQL
		} else {
			where += f.col + " IN (" + strings.Join(marks, ", ") + ")"
		}
	}
	countQuery, nfilter := `SELECT count(*) FROM `+table+where, len(args)
	if after != "" {
		cond("id >", after)
	}
	args = append(args, limit+1)
	pageQuery := fmt.Sprintf(`SELECT %s FROM %s%s ORDER BY id LIMIT $%d`, cols, table, where, len(args))

	var items []T
	var total int
	err = s.d.Snapshot(ctx, func(q Querier) error {
		rows, err := q.Query(ctx, pageQuery, args...)
		if items, err = collect(rows, err, scan); err != nil {
			return err
		}
		return q.QueryRow(ctx, countQuery, args[:nfilter]...).Scan(&total)
	})
	if err != nil {
		return nil, "", 0, s.mapErr(err, what)
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		next = dbutil.EncodeCursor(id(items[limit-1]))
	}
	return items, next, total, nil
}

// GetSetting returns the value stored under key; ErrNotFound if unset.
func (s *Store) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	if err := s.r.QueryRow(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v); err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("setting %q", key))
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// PutSetting stores value under key, replacing any previous value.
func (s *Store) PutSetting(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{} // the column is NOT NULL; nil means "empty" here
	}
	_, err := s.w.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = settings.version + 1`, key, value)
	return s.mapErr(err, fmt.Sprintf("put setting %q", key))
}

// GetSettingVersion returns the value stored under key and its version;
// ErrNotFound (and version 0) if unset.
func (s *Store) GetSettingVersion(ctx context.Context, key string) ([]byte, int64, error) {
	var v []byte
	var ver int64
	if err := s.r.QueryRow(ctx, `SELECT value, version FROM settings WHERE key = $1`, key).Scan(&v, &ver); err != nil {
		return nil, 0, s.mapErr(err, fmt.Sprintf("setting %q", key))
	}
	if v == nil {
		v = []byte{}
	}
	return v, ver, nil
}

// PutSettingIf stores value under key if the stored version is version
// (0: no row yet), in one statement, and returns the new version;
// ErrConflict if another write came first.
func (s *Store) PutSettingIf(ctx context.Context, key string, value []byte, version int64) (int64, error) {
	what := fmt.Sprintf("put setting %q at version %d", key, version)
	if value == nil {
		value = []byte{}
	}
	var n int64
	var err error
	if version == 0 {
		n, err = s.w.Exec(ctx, `INSERT INTO settings (key, value, version) VALUES ($1, $2, 1) ON CONFLICT (key) DO NOTHING`, key, value)
	} else {
		n, err = s.w.Exec(ctx, `UPDATE settings SET value = $1, version = version + 1 WHERE key = $2 AND version = $3`, value, key, version)
	}
	if err != nil {
		return 0, s.mapErr(err, what)
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: the setting was written meanwhile: %w", what, store.ErrConflict)
	}
	return version + 1, nil
}

// UseNonce records a broker's nonce as used; see store.BrokerNonces. An
// expired row for the same nonce is taken over, in the same statement.
func (s *Store) UseNonce(ctx context.Context, brokerID, nonce string, now, expiresAt time.Time) error {
	n, err := s.w.Exec(ctx, `INSERT INTO broker_nonces (broker_id, nonce, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (broker_id, nonce) DO UPDATE SET expires_at = excluded.expires_at
		WHERE broker_nonces.expires_at <= $4`, brokerID, nonce, s.d.Time(expiresAt), s.d.Time(now))
	what := fmt.Sprintf("nonce of broker %q", brokerID)
	if err != nil {
		return s.mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s: used before: %w", what, store.ErrAlreadyExists)
	}
	return nil
}

// PruneNonces deletes the nonces expired at now.
func (s *Store) PruneNonces(ctx context.Context, now time.Time) (int, error) {
	n, err := s.w.Exec(ctx, `DELETE FROM broker_nonces WHERE expires_at <= $1`, s.d.Time(now))
	return int(n), s.mapErr(err, "prune broker nonces")
}
