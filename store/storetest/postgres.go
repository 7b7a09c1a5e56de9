package storetest

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
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

// NewPostgresDB returns the URL of an empty database on the test server,
// the test's alone until it ends. The database is not dropped when the test
// ends (after cleanups registered later, such as closing a store on it,
// have run) but recycled: emptied, renamed and handed to a later test (see
// recycler). Its URL is never handed out again.
func NewPostgresDB(t testing.TB) string {
	t.Helper()
	admin := PostgresURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := recyclerFor(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	name, err := r.take(ctx)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.recycle(ctx, name, t.Logf); err != nil {
			t.Errorf("test database %s: %v", name, err)
		}
	})
	u, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	return u
}

// withDatabase returns the connection string admin pointing at database
// name instead, for URLs and key=value DSNs alike.
func withDatabase(admin, name string) (string, error) {
	if strings.HasPrefix(admin, "postgres://") || strings.HasPrefix(admin, "postgresql://") {
		u, err := url.Parse(admin)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	return admin + " dbname=" + name, nil // in a DSN the last setting wins
}
