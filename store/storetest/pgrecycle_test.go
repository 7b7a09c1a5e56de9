package storetest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestDBOwner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner uint32
		ok    bool
	}{
		{dbName(0xdeadbeef, 7), 0xdeadbeef, true},
		{dbName(1, 1<<40), 1, true},
		{"scion_test_0000000a_3", 10, true},
		{"scion_test_0123456789abcdef", 0, false}, // older code's: owner unknown
		{"scion_test_0000000A_3", 0, false},
		{"scion_test_0000000a_", 0, false},
		{"scion_test_0000000a_3x", 0, false},
		{"scion_test_000000a_3", 0, false},
		{"scion_test_0000000a", 0, false},
		{"postgres", 0, false},
		{"xscion_test_0000000a_3", 0, false},
	} {
		owner, ok := dbOwner(tc.name)
		if owner != tc.owner || ok != tc.ok {
			t.Errorf("dbOwner(%q) = %x, %v; want %x, %v", tc.name, owner, ok, tc.owner, tc.ok)
		}
	}
}

func TestByOwner(t *testing.T) {
	got := byOwner([]string{dbName(1, 1), dbName(2, 1), dbName(1, 2), dbName(3, 1), "scion_test_0123456789abcdef", "postgres"}, 3)
	want := map[uint32][]string{1: {dbName(1, 1), dbName(1, 2)}, 2: {dbName(2, 1)}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("byOwner = %v, want %v", got, want)
	}
}

// fingerprint is what a test could see of a database's contents: its
// schemas with their owners and grants, how many relations, functions and
// types there are, its extensions, large objects and settings.
func fingerprint(t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var fp string
	err = conn.QueryRow(t.Context(), `SELECT concat_ws(' / ',
		(SELECT string_agg(nspname || ':' || nspowner::regrole || ':' || coalesce(nspacl::text, ''), ',' ORDER BY nspname)
			FROM pg_namespace WHERE nspname NOT LIKE 'pg\_temp\_%' AND nspname NOT LIKE 'pg\_toast\_temp\_%'),
		(SELECT 'class=' || count(*) FROM pg_class),
		(SELECT 'proc=' || count(*) FROM pg_proc),
		(SELECT 'type=' || count(*) FROM pg_type),
		(SELECT 'ext=' || string_agg(extname, ',' ORDER BY extname) FROM pg_extension),
		(SELECT 'lo=' || count(*) FROM pg_largeobject_metadata),
		(SELECT 'settings=' || count(*) FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())))`).Scan(&fp)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func dbOf(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

// A recycled database is as empty as a new one, under a new name, and a
// connection the last test leaked reaches neither it nor its old name.
func TestRecycledDatabaseIsFresh(t *testing.T) {
	admin := PostgresURL(t)
	var used string
	var leaked *pgx.Conn
	t.Run("dirty", func(t *testing.T) {
		used = NewPostgresDB(t)
		conn, err := pgx.Connect(t.Context(), used)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`CREATE TABLE t (id serial PRIMARY KEY, v text)`,
			`INSERT INTO t (v) VALUES ('left behind')`,
			`CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
			`CREATE TYPE e AS ENUM ('a')`,
			`CREATE SCHEMA other`,
			`CREATE TABLE other.x (i int)`,
			`SELECT lo_create(0)`,
			`REVOKE ALL ON SCHEMA public FROM PUBLIC`,
			`ALTER DATABASE ` + dbOf(t, used) + ` SET work_mem = '8MB'`,
		} {
			if _, err := conn.Exec(t.Context(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		leaked = conn // never closed by the test
	})
	r, err := recyclerFor(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	spare := len(r.free)
	r.mu.Unlock()
	if spare == 0 {
		t.Fatal("the database was not kept for another test")
	}
	if _, err := leaked.Exec(t.Context(), `SELECT 1`); err == nil {
		t.Error("the leaked connection still works after its test ended")
	}
	leaked.Close(context.Background())
	if c, err := pgx.Connect(t.Context(), used); err == nil {
		c.Close(context.Background())
		t.Errorf("connected to the ended test's database %s", dbOf(t, used))
	}

	// A database made the old way, for comparison.
	fresh := "scion_fresh_" + strings.TrimPrefix(dbName(r.id, 0), dbPrefix)
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) }) // after the drops below
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+fresh); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+fresh+" WITH (FORCE)") })
	freshURL, _ := withDatabase(admin, fresh)
	want := fingerprint(t, freshURL)

	t.Run("next", func(t *testing.T) {
		next := NewPostgresDB(t)
		if next == used {
			t.Errorf("URL %s handed out twice", next)
		}
		if got := fingerprint(t, next); got != want {
			t.Errorf("recycled database:\n%s\nnew database:\n%s", got, want)
		}
	})
}

// The sweep drops the databases of an owner whose lock is free and keeps
// those of one whose lock is held.
func TestSweepDropsOnlyEndedOwners(t *testing.T) {
	admin := PostgresURL(t)
	r, err := recyclerFor(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	<-r.swept // the start-up sweep would race this one
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) }) // after the drops below
	ended, live := r.id+1, r.id+2
	var got bool
	if err := conn.QueryRow(t.Context(), `SELECT pg_try_advisory_lock($1, $2)`, lockClass, int32(live)).Scan(&got); err != nil || !got {
		t.Fatalf("lock a live owner: %v, %v", got, err)
	}
	dbs := []string{dbName(ended, 1), dbName(ended, 2), dbName(live, 1)}
	for _, db := range dbs {
		if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	}
	if err := sweep(t.Context(), admin, r.id); err != nil {
		t.Fatal(err)
	}
	for i, db := range dbs {
		var exists bool
		if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, db).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if want := i == 2; exists != want {
			t.Errorf("%s exists = %v after the sweep, want %v", db, exists, want)
		}
	}
}
