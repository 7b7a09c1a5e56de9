package storetest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Test databases are recycled, not dropped. On PostgreSQL 15 every DROP
// DATABASE forces an immediate checkpoint of the whole cluster and waits for
// every backend of the cluster to absorb a signal barrier, and every CREATE
// DATABASE copies template1 through the WAL: a test's setup and cleanup cost
// grew with every other test's writes on the server (drops of 1.5s median,
// 4.8s at most, measured with 8 tests at a time on a loaded machine), and a
// drop queued behind the checkpointer could outlast its cleanup's minute. A recycled database is
// shut to connections, cleared of sessions, renamed (a pool the test leaked
// holds the old name, which no longer exists) and emptied with transactional
// DDL, none of which waits for a checkpoint.
//
// A process's spare databases outlive it: there is no hook at process exit.
// Each process holds a session advisory lock on the admin database, keyed by
// the owner id its database names carry; the next process to start drops the
// databases of owners whose lock is free (dead processes).

// lockClass is the first key of the owner locks (pg_advisory_lock(int, int)
// keys are apart from single-bigint ones): "SC" in ASCII.
const lockClass = 0x5343

const dbPrefix = "scion_test_"

// dbName names a test database of owner; seq makes it unique within it.
func dbName(owner uint32, seq uint64) string {
	return fmt.Sprintf("%s%08x_%d", dbPrefix, owner, seq)
}

// dbOwner is the owner of a database dbName named. It is false for any
// other name, including the scion_test_<16 hex> databases older code made:
// their owners cannot be told dead, so they are never swept.
func dbOwner(name string) (uint32, bool) {
	rest, ok := strings.CutPrefix(name, dbPrefix)
	if !ok {
		return 0, false
	}
	hex, seq, ok := strings.Cut(rest, "_")
	if !ok || len(hex) != 8 || !digits(seq, "0123456789") || !digits(hex, "0123456789abcdef") {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 32)
	if err != nil {
		return 0, false
	}
	return uint32(id), true
}

// digits reports whether s is non-empty and made only of the runes in set.
func digits(s, set string) bool {
	return s != "" && strings.Trim(s, set) == ""
}

// byOwner groups the test databases among names by owner, leaving out self's.
func byOwner(names []string, self uint32) map[uint32][]string {
	m := map[uint32][]string{}
	for _, n := range names {
		if o, ok := dbOwner(n); ok && o != self {
			m[o] = append(m[o], n)
		}
	}
	return m
}

// clearSQL drops every user object of the database it runs in: all live
// in schemas (tables, functions, types, extensions alike), bar large
// objects. publicSQL then re-makes the public schema as template1 has it.
// Not reset: a role's settings in the database (ALTER ROLE ... IN DATABASE)
// and what is cluster-wide (roles): the store makes neither.
const clearSQL = `DO $clear$
DECLARE
	s name;
BEGIN
	FOR s IN SELECT nspname FROM pg_namespace
		WHERE nspname NOT IN ('pg_catalog', 'information_schema')
			AND nspname NOT LIKE 'pg\_toast%' AND nspname NOT LIKE 'pg\_temp\_%'
	LOOP
		EXECUTE format('DROP SCHEMA %I CASCADE', s);
	END LOOP;
	PERFORM lo_unlink(oid) FROM pg_largeobject_metadata;
END
$clear$`

// publicQuery, run in a new database, gives the statements that make its
// public schema: owner and grants as template1 has them (PostgreSQL 15 made
// them pg_database_owner's, with USAGE only for PUBLIC). No row when
// template1 has no public schema.
const publicQuery = `SELECT format('CREATE SCHEMA public AUTHORIZATION %s', nspowner::regrole) || coalesce((
	SELECT string_agg(format('; GRANT %s ON SCHEMA public TO %s', a.privilege_type,
		CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END), '')
	FROM aclexplode(nspacl) a WHERE a.grantee <> nspowner), '')
FROM pg_namespace WHERE nspname = 'public'`

// recycler hands out the test databases of one admin URL in this process.
type recycler struct {
	admin string
	owner *pgx.Conn // holds the owner lock while the process lives; never closed
	id    uint32
	swept chan struct{} // closed when the start-up sweep has ended

	mu        sync.Mutex
	seq       uint64
	free      []string // emptied databases, ready for the next test
	public    string   // publicSQL, from the first new database
	hasPublic bool     // public is known
}

var (
	recyclersMu sync.Mutex
	recyclers   = map[string]*recycler{}
)

// recyclerFor is admin's recycler, started on first use.
func recyclerFor(ctx context.Context, admin string) (*recycler, error) {
	recyclersMu.Lock()
	defer recyclersMu.Unlock()
	if r := recyclers[admin]; r != nil {
		return r, nil
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, err
	}
	r := &recycler{admin: admin, owner: conn, swept: make(chan struct{})}
	for {
		var b [4]byte
		rand.Read(b[:])
		r.id = binary.BigEndian.Uint32(b[:])
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, int32(r.id)).Scan(&got); err != nil {
			conn.Close(ctx)
			return nil, fmt.Errorf("take owner lock: %w", err)
		}
		if got {
			break
		}
	}
	recyclers[admin] = r
	// In the background: no test should wait for a dead process's drops.
	go func() {
		defer close(r.swept)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := sweep(ctx, admin, r.id); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: sweeping test databases of ended processes: %v\n", err)
		}
	}()
	return r, nil
}

// sweep drops the test databases whose owner's lock is free: their process
// has ended. It holds each such lock while it drops, so that two sweepers
// do not drop the same databases.
func sweep(ctx context.Context, admin string, self uint32) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'scion\_test\_%'`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for owner, dbs := range byOwner(names, self) {
		var dead bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockClass, int32(owner)).Scan(&dead); err != nil {
			return err
		}
		if !dead {
			continue
		}
		for _, db := range dbs {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop %s: %w", db, err)
			}
		}
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, lockClass, int32(owner)); err != nil {
			return err
		}
	}
	return nil
}

func (r *recycler) nextName() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return dbName(r.id, r.seq)
}

// take returns an empty database for a test: a recycled one, or else a
// new one.
func (r *recycler) take(ctx context.Context) (string, error) {
	r.mu.Lock()
	if n := len(r.free); n > 0 {
		name := r.free[n-1]
		r.free = r.free[:n-1]
		r.mu.Unlock()
		return name, nil
	}
	r.mu.Unlock()
	name := r.nextName()
	conn, err := pgx.Connect(ctx, r.admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	r.mu.Lock()
	known := r.hasPublic
	r.mu.Unlock()
	if !known {
		if err := r.learnPublic(ctx, name); err != nil {
			conn.Exec(ctx, "DROP DATABASE "+name)
			return "", err
		}
	}
	return name, nil
}

// learnPublic reads how template1 has the public schema from name, a
// database just created from it. template1 itself is not to be connected
// to: CREATE DATABASE refuses to copy it while anyone is.
func (r *recycler) learnPublic(ctx context.Context, name string) error {
	url, err := withDatabase(r.admin, name)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var sql string
	if err := conn.QueryRow(ctx, publicQuery).Scan(&sql); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the public schema: %w", err)
	}
	r.mu.Lock()
	r.public, r.hasPublic = sql, true
	r.mu.Unlock()
	return nil
}

// recycle takes name back from a test that has ended. It empties the
// database under a new name and keeps it for the next test. If a step
// fails it drops the database instead (logging why), so that a database is
// handed out again only once wholly emptied; the error is the drop's.
func (r *recycler) recycle(ctx context.Context, name string, logf func(string, ...any)) error {
	conn, err := pgx.Connect(ctx, r.admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	next := r.nextName()
	if err := r.empty(ctx, conn, name, next); err != nil {
		logf("recycling test database %s: %v; dropping it", name, err)
		for _, db := range []string{name, next} {
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop: %w", err)
			}
		}
		return nil
	}
	r.mu.Lock()
	r.free = append(r.free, next)
	r.mu.Unlock()
	return nil
}

// empty moves database name to next, out of reach of the sessions and pools
// the test left behind, and clears it.
func (r *recycler) empty(ctx context.Context, admin *pgx.Conn, name, next string) error {
	for _, q := range []string{
		// No new session from here on, even a superuser's; then end those
		// there are. RENAME waits (up to 5s) for them to exit.
		"ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS false",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "' AND pid <> pg_backend_pid()",
		"ALTER DATABASE " + name + " RENAME TO " + next,
		"ALTER DATABASE " + next + " WITH ALLOW_CONNECTIONS true",
		"ALTER DATABASE " + next + " RESET ALL",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	url, err := withDatabase(r.admin, next)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	r.mu.Lock()
	public, known := r.public, r.hasPublic
	r.mu.Unlock()
	if !known { // every database handed out was recycled or new, and new ones teach it
		return errors.New("the template's public schema is not known")
	}
	// One simple-protocol query: one implicit transaction.
	if _, err := conn.Exec(ctx, clearSQL+"; "+public); err != nil {
		return fmt.Errorf("empty %s: %w", next, err)
	}
	return nil
}
