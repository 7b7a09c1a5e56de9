// Package postgres is the PostgreSQL dialect of store/sql (pgx/v5), for
// Hubs that run several replicas or want a managed database.
//
// Every method is a single statement, one batch or one short READ
// COMMITTED transaction. Capacity reservations serialise on the broker's
// row (SELECT ... FOR NO KEY UPDATE) before counting, so concurrent Hubs
// never push a broker past its limit. pgx prepares and caches each
// statement per connection, so the hot paths are parsed once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scion-go/scion/store"
	sqlstore "github.com/scion-go/scion/store/sql"
)

// Store is a store.Store backed by a PostgreSQL database.
type Store struct {
	*sqlstore.Store
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or key=value
// DSN; pool settings such as pool_max_conns are honoured) and brings its
// schema up to date.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// pgx defaults to max(4, NumCPU) connections, which makes concurrent
	// creates queue for a connection while each waits on its commit's
	// fsync; more connections let commits share a flush. An explicit
	// pool_max_conns in the URL wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = 32
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	d := &dialect{pool: pool, q: &querier{pool}}
	if err := d.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{sqlstore.New(d)}, nil
}

// dialect is sqlstore.Dialect for PostgreSQL (its AgentWrites in writes.go).
type dialect struct {
	pool *pgxpool.Pool
	q    *querier // on the pool
}

func (d *dialect) Reader() sqlstore.Querier { return d.q }
func (d *dialect) Writer() sqlstore.Querier { return d.q }

// Tx runs fn in a READ COMMITTED transaction and commits it.
func (d *dialect) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(&querier{tx}) })
}

// Snapshot runs fn in a read-only REPEATABLE READ transaction.
func (d *dialect) Snapshot(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return fn(&querier{tx}) })
}

// Postgres error codes we translate.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"

	// Raised by scion_refuse (migration 0005) to abort a batch.
	codeKeyInUse = "SC409" // the idempotency key is taken
	codeNotFound = "SC404" // a record the statement needs is missing
	codeQuota    = "SC429" // the broker holds its limit of reservations
	codeStale    = "SC412" // the row to replace is not at the version expected
	codeScope    = "SC421" // the agent holds its reservation on another broker
)

// refusedWith says whether err is scion_refuse's error with code.
func refusedWith(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// Classify maps constraint violations and scion_refuse's refusals to the
// store's errors.
func (d *dialect) Classify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case uniqueViolation:
			return store.ErrAlreadyExists
		case foreignKeyViolation:
			// Inserts and updates only: a referenced row is missing.
			return fmt.Errorf("referenced record: %w", store.ErrNotFound)
		case codeNotFound:
			return fmt.Errorf("%s: %w", pe.Message, store.ErrNotFound)
		case codeKeyInUse:
			return store.ErrKeyInUse
		case codeQuota:
			return store.ErrQuota
		case codeScope:
			return fmt.Errorf("%s: %w", pe.Message, store.ErrReservationScope)
		}
	}
	return nil
}

func (d *dialect) mapErr(err error, what string) error { return sqlstore.MapErr(d.Classify, err, what) }

// Time binds t as it is: pgx sends timestamptz as an instant.
func (d *dialect) Time(t time.Time) any { return t }

func (d *dialect) ScanTime(dst *time.Time) any { return (*utcTime)(dst) }

// utcTime reads a timestamptz in UTC (pgx would give the local zone).
type utcTime time.Time

func (u *utcTime) ScanTimestamptz(v pgtype.Timestamptz) error {
	*u = utcTime{}
	if v.Valid {
		*u = utcTime(v.Time.UTC())
	}
	return nil
}

// JSON binds the encoded bytes; nil is NULL.
func (d *dialect) JSON(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// Ping checks the database answers.
func (d *dialect) Ping(ctx context.Context) error { return d.pool.Ping(ctx) }

// Close closes the pool. It is safe to call more than once.
func (d *dialect) Close() error {
	d.pool.Close()
	return nil
}

// querier is sqlstore.Querier on the pool or a transaction.
type querier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (q *querier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (q *querier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	return q.q.Query(ctx, sql, args...)
}

func (q *querier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return q.q.QueryRow(ctx, sql, args...)
}
