// Package sqlite implements store.Store on an embedded SQLite database
// (modernc.org/sqlite, pure Go) for single-node Hubs.
//
// The database runs in WAL mode with synchronous=NORMAL: a committed
// transaction is in the WAL before the call returns, so it survives the
// Hub being killed (only an OS crash or power loss can lose the last
// commits, which is the trade-off we accept for not fsyncing every write).
//
// SQLite allows one writer at a time, so the Store keeps exactly one write
// connection (queueing writers in Go instead of spinning on SQLITE_BUSY)
// and a separate pool of read-only connections: in WAL mode readers see
// the last committed state and never wait for the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// Store is a store.Store backed by a SQLite file.
type Store struct {
	w *sql.DB // exactly one connection; every write goes through it
	r *sql.DB // read-only pool

	// Statements on the hot path of agent creation and status updates,
	// prepared once (on the single write connection, or per read
	// connection) instead of parsed on every call.
	insertAgent         *sql.Stmt
	updateAgent         *sql.Stmt
	updateAgentSameKeys *sql.Stmt
	reserveCond         *sql.Stmt
	selectAgent         *sql.Stmt
	agentVersion        *sql.Stmt
	// Read on every API call (the caller's token and user) and every
	// create (its project, broker and providers).
	selectToken      *sql.Stmt
	selectUser       *sql.Stmt
	selectTokenUser  *sql.Stmt
	selectProject    *sql.Stmt
	selectBroker     *sql.Stmt
	selectBrokerFor  *sql.Stmt
	projectProviders *sql.Stmt

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// busyTimeoutMS bounds how long a connection waits for another process's
// lock (our own writers queue in database/sql and never hit it).
const busyTimeoutMS = 10000

// Open opens (creating if needed, mode 0600) the database file at path and
// brings its schema up to date. It refuses a database file that group or
// others can read. path must be a file name: ":memory:" would give every
// connection its own empty database.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: %q is not a plain database file path", path)
	}
	if err := prepareDBFile(path); err != nil {
		return nil, err
	}
	// _txlock=immediate: every BeginTx takes the write lock up front, so a
	// read-modify-write transaction cannot fail half-way with SQLITE_BUSY
	// when another process wrote in between.
	wdsn := fmt.Sprintf("%s?_txlock=immediate&_busy_timeout=%d&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1"+
		"&_pragma=temp_store(MEMORY)", path, busyTimeoutMS)
	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	// Never recycle the write connection: its prepared statements live on it.
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	s := &Store{w: w}
	if err := s.migrateRetrying(ctx); err != nil {
		w.Close()
		return nil, err
	}

	rdsn := fmt.Sprintf("%s?_busy_timeout=%d&_query_only=1", path, busyTimeoutMS)
	r, err := sql.Open("sqlite", rdsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s.r = r

	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := privatizeSidecars(path); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		db    *sql.DB
		dst   **sql.Stmt
		query string
	}{
		{s.w, &s.insertAgent, insertAgentSQL},
		{s.w, &s.updateAgent, updateAgentSQL},
		{s.w, &s.updateAgentSameKeys, updateAgentSameKeysSQL},
		{s.w, &s.reserveCond, reserveCondSQL},
		{s.r, &s.selectAgent, `SELECT ` + agentCols + ` FROM agents WHERE id = ?`},
		{s.r, &s.agentVersion, `SELECT version FROM agents WHERE id = ?`},
		{s.r, &s.selectToken, `SELECT ` + tokenCols + ` FROM tokens WHERE hash = ?`},
		{s.r, &s.selectUser, `SELECT ` + userCols + ` FROM users WHERE id = ?`},
		{s.r, &s.selectTokenUser, `SELECT ` + dbutil.Prefixed("t.", tokenCols) + `, ` + dbutil.Prefixed("u.", userCols) +
			` FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`},
		{s.r, &s.selectProject, `SELECT ` + projectCols + ` FROM projects WHERE id = ?1 OR name = ?1 ORDER BY id <> ?1 LIMIT 1`},
		{s.r, &s.selectBroker, `SELECT ` + brokerCols + ` FROM runtime_brokers WHERE id = ?1 OR name = ?1 ORDER BY id <> ?1 LIMIT 1`},
		{s.r, &s.selectBrokerFor, `SELECT ` + brokerCols + `, EXISTS (SELECT 1 FROM project_providers
			WHERE project_id = ?2 AND broker_id = runtime_brokers.id) FROM runtime_brokers WHERE id = ?1 OR name = ?1 ORDER BY id <> ?1 LIMIT 1`},
		{s.r, &s.projectProviders, `SELECT broker_id FROM project_providers WHERE project_id = ? ORDER BY broker_id`},
	} {
		st, err := p.db.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		*p.dst = st
	}
	return nil
}

// Ping checks both the write connection and the read pool answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return err
	}
	return s.r.PingContext(ctx)
}

// Close closes the database. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		for _, st := range []*sql.Stmt{s.insertAgent, s.updateAgent, s.updateAgentSameKeys, s.reserveCond, s.selectAgent, s.agentVersion,
			s.selectToken, s.selectUser, s.selectTokenUser, s.selectProject, s.selectBroker, s.selectBrokerFor, s.projectProviders} {
			if st != nil {
				st.Close()
			}
		}
		var errs []error
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		errs = append(errs, s.w.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// write runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// read runs fn in a read transaction so that its queries (a page and its
// total, say) see one snapshot.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// mapErr turns driver errors into the store's sentinel errors, wrapped
// with what failed so messages stay useful.
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", what, store.ErrAlreadyExists)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			// Inserts and updates only: a referenced row is missing.
			return fmt.Errorf("%s: referenced record: %w", what, store.ErrNotFound)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// mustAffect returns ErrNotFound when an UPDATE or DELETE hit no row.
func mustAffect(res sql.Result, err error, what string) error {
	if err != nil {
		return mapErr(err, what)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// migrateRetrying runs migrate, retrying while another process is turning
// the same new file into a WAL database: during that switch SQLite answers
// SQLITE_BUSY at once rather than through the busy timeout. Every step of
// migrate is idempotent, so a retry only finishes what is left.
func (s *Store) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(time.Duration(busyTimeoutMS) * time.Millisecond)
	wait := 5 * time.Millisecond
	for {
		err := s.migrate(ctx)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait + time.Duration(rand.Int64N(int64(wait)))):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}
