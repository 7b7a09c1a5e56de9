// Package sqlite is the SQLite dialect of store/sql: store.Store on an
// embedded database (modernc.org/sqlite, pure Go) for single-node Hubs.
//
// The database runs in WAL mode with synchronous=NORMAL: a committed
// transaction is in the WAL before the call returns, so it survives the
// Hub being killed (only an OS crash or power loss can lose the last
// commits, which is the trade-off we accept for not fsyncing every write).
//
// SQLite allows one writer at a time, so the Store keeps exactly one write
// connection (queueing writers in Go instead of spinning on SQLITE_BUSY)
// and a separate pool of read-only connections: in WAL mode readers see
// the last committed state and never wait for the writer. Every statement
// is prepared once per connection and kept.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/scion-go/scion/store"
	sqlstore "github.com/scion-go/scion/store/sql"
)

// Store is a store.Store backed by a SQLite file.
type Store struct {
	*sqlstore.Store
	db *dialect
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
	d := &dialect{w: &conn{db: w}}
	if err := d.migrateRetrying(ctx); err != nil {
		w.Close()
		return nil, err
	}

	r, err := sql.Open("sqlite", fmt.Sprintf("%s?_busy_timeout=%d&_query_only=1", path, busyTimeoutMS))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	d.r = &conn{db: r}
	s := &Store{Store: sqlstore.New(d), db: d}
	if err := privatizeSidecars(path); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// dialect is sqlstore.Dialect for SQLite.
type dialect struct {
	w *conn // exactly one connection; every write goes through it
	r *conn // read-only pool

	closeOnce sync.Once
	closeErr  error
}

func (d *dialect) Reader() sqlstore.Querier { return &txConn{c: d.r} }
func (d *dialect) Writer() sqlstore.Querier { return &txConn{c: d.w} }

// Tx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (d *dialect) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	t := &txConn{c: d.w}
	err := d.write(ctx, func(tx *sql.Tx) error { t.tx = tx; return fn(t) })
	t.prepareMissed(ctx)
	return err
}

// Snapshot runs fn in a read transaction, so that its queries (a page and
// its total, say) see one snapshot.
func (d *dialect) Snapshot(ctx context.Context, fn func(sqlstore.Querier) error) error {
	tx, err := d.r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	t := &txConn{tx: tx, c: d.r}
	err = func() error { defer tx.Rollback(); return fn(t) }()
	t.prepareMissed(ctx)
	return err
}

// Classify maps constraint violations to the store's errors.
func (d *dialect) Classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return store.ErrAlreadyExists
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			// Inserts and updates only: a referenced row is missing.
			return fmt.Errorf("referenced record: %w", store.ErrNotFound)
		}
	}
	return nil
}

// Times are stored as INTEGER microseconds since the Unix epoch (UTC).
func (d *dialect) Time(t time.Time) any { return t.UnixMicro() }

func (d *dialect) ScanTime(dst *time.Time) any { return (*micros)(dst) }

// micros scans an INTEGER microseconds column into a time.Time.
type micros time.Time

func (m *micros) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*m = micros{}
	case int64:
		*m = micros(time.UnixMicro(v).UTC())
	default:
		return fmt.Errorf("sqlite: time column holds %T", src)
	}
	return nil
}

// JSON binds a string: STRICT TEXT columns refuse the BLOB a []byte would
// bind as. nil stays NULL.
func (d *dialect) JSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// Ping checks both the write connection and the read pool answer.
func (d *dialect) Ping(ctx context.Context) error {
	if err := d.w.db.PingContext(ctx); err != nil {
		return err
	}
	return d.r.db.PingContext(ctx)
}

// Close closes the database. It is safe to call more than once.
func (d *dialect) Close() error {
	d.closeOnce.Do(func() {
		var errs []error
		if d.r != nil {
			errs = append(errs, d.r.close())
		}
		errs = append(errs, d.w.close())
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// conn is a database with its prepared statements, by query text.
type conn struct {
	db    *sql.DB
	stmts sync.Map // string -> *sql.Stmt
}

var (
	castRE  = regexp.MustCompile(`::[a-z]+`)
	lockRE  = regexp.MustCompile(`\s+FOR (UPDATE|NO KEY UPDATE|SHARE|KEY SHARE)\b`)
	paramRE = regexp.MustCompile(`\$[0-9]+`)
)

// rebind turns a query in PostgreSQL's syntax into SQLite's: $N is ?N,
// casts go, and so do row-lock clauses (the single writer serialises
// every write transaction, so there is nothing to lock). The queries hold
// no '$' but their placeholders. When they are $1, $2, ... in order, each
// once, they become plain '?': the driver looks up the name of every
// numbered parameter on every bind, an allocation each.
func rebind(q string) string {
	q = lockRE.ReplaceAllString(castRE.ReplaceAllString(q, ""), "")
	n := 0
	q2 := paramRE.ReplaceAllStringFunc(q, func(p string) string {
		if n++; p != fmt.Sprintf("$%d", n) {
			n = -1 << 30
		}
		return "?"
	})
	if n >= 0 {
		return q2
	}
	return strings.ReplaceAll(q, "$", "?")
}

func (c *conn) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := c.stmts.Load(q); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := c.db.PrepareContext(ctx, rebind(q))
	if err != nil {
		return nil, err
	}
	if old, loaded := c.stmts.LoadOrStore(q, st); loaded {
		st.Close()
		return old.(*sql.Stmt), nil
	}
	return st, nil
}

func (c *conn) close() error {
	c.stmts.Range(func(_, st any) bool { st.(*sql.Stmt).Close(); return true })
	return c.db.Close()
}

// txConn runs c's statements in tx (nil: outside any transaction).
type txConn struct {
	tx     *sql.Tx
	c      *conn
	missed []string // queries tx prepared for itself
}

func (t *txConn) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if t.tx == nil {
		return t.c.stmt(ctx, q)
	}
	if st, ok := t.c.stmts.Load(q); ok {
		return t.tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	// Preparing on the database would wait for the connection this
	// transaction holds: prepare for this transaction only, and for later
	// ones once it is done (prepareMissed).
	t.missed = append(t.missed, q)
	return t.tx.PrepareContext(ctx, rebind(q))
}

// prepareMissed prepares on the database what the finished transaction
// had to prepare for itself. Errors are the next statement's to report.
func (t *txConn) prepareMissed(ctx context.Context) {
	for _, q := range t.missed {
		t.c.stmt(ctx, q)
	}
}

func (t *txConn) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *txConn) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (t *txConn) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

type rows struct{ *sql.Rows }

func (r rows) Close() { r.Rows.Close() }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// migrateRetrying runs migrate, retrying while another process is turning
// the same new file into a WAL database: during that switch SQLite answers
// SQLITE_BUSY at once rather than through the busy timeout. Every step of
// migrate is idempotent, so a retry only finishes what is left.
func (d *dialect) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(time.Duration(busyTimeoutMS) * time.Millisecond)
	wait := 5 * time.Millisecond
	for {
		err := d.migrate(ctx)
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
