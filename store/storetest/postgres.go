package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the environment variable holding the URL of a
// PostgreSQL server the tests may create databases on, e.g.
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
// (`eval "$(bash .ci/postgres.sh)"` starts one and sets it).
const PostgresEnv = "SCION_TEST_POSTGRES_URL"

// PostgresURL returns the admin URL of the test PostgreSQL server. Without
// one the test is skipped, except under CI (CI=true), where PostgreSQL is
// required and its absence fails the test: a CI run that silently skipped
// the PostgreSQL tests would prove nothing about them.
func PostgresURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(PostgresEnv); u != "" {
		return u
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatalf("PostgreSQL is required when CI=true: set %s (eval \"$(bash .ci/postgres.sh)\")", PostgresEnv)
	}
	t.Skipf("%s not set; skipping PostgreSQL test (eval \"$(bash .ci/postgres.sh)\" to run it)", PostgresEnv)
	return ""
}

// NewPostgresDB creates an empty database on the test server and returns
// its URL; the database is dropped when the test ends (after cleanups
// registered later, such as closing a store on it, have run).
func NewPostgresDB(t testing.TB) string {
	t.Helper()
	admin := PostgresURL(t)
	var rnd [8]byte
	rand.Read(rnd[:])
	name := "scion_test_" + hex.EncodeToString(rnd[:])

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		// FORCE: a pool the test leaked must not keep the database alive.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(t, admin, name)
}

// withDatabase returns the connection string admin pointing at database
// name instead, for URLs and key=value DSNs alike.
func withDatabase(t testing.TB, admin, name string) string {
	if strings.HasPrefix(admin, "postgres://") || strings.HasPrefix(admin, "postgresql://") {
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatalf("%s: %v", PostgresEnv, err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String()
	}
	return admin + " dbname=" + name // in a DSN the last setting wins
}
