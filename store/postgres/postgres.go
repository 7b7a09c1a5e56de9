// Package postgres implements store.Store on PostgreSQL (pgx/v5), for Hubs
// that run several replicas or want a managed database.
//
// Every method is a single statement or one short transaction. Capacity
// reservations serialise on the broker's row (SELECT ... FOR NO KEY UPDATE)
// before counting, so concurrent Hubs never push a broker past its limit.
// pgx prepares and caches each statement per connection, so the hot paths
// are parsed once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scion-go/scion/store"
)

// Store is a store.Store backed by a PostgreSQL database.
type Store struct {
	pool *pgxpool.Pool
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
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Close closes the pool. It is safe to call more than once.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// tx runs fn in a READ COMMITTED transaction and commits it.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
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
)

// refusedWith says whether err is scion_refuse's error with code.
func refusedWith(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// mapErr turns driver errors into the store's sentinel errors, wrapped
// with what failed so messages stay useful.
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case uniqueViolation:
			return fmt.Errorf("%s: %w", what, store.ErrAlreadyExists)
		case foreignKeyViolation:
			// Inserts and updates only: a referenced row is missing.
			return fmt.Errorf("%s: referenced record: %w", what, store.ErrNotFound)
		case codeNotFound:
			return fmt.Errorf("%s: %s: %w", what, pe.Message, store.ErrNotFound)
		case codeKeyInUse:
			return fmt.Errorf("%s: %w", what, store.ErrKeyInUse)
		case codeQuota:
			return fmt.Errorf("%s: %w", what, store.ErrQuota)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// mustAffect returns ErrNotFound when an UPDATE or DELETE hit no row.
func mustAffect(tag pgconn.CommandTag, err error, what string) error {
	if err != nil {
		return mapErr(err, what)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
