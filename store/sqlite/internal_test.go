package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPragmas: the settings the durability and concurrency design rests on
// are in force on the connections that matter.
func TestPragmas(t *testing.T) {
	s := openInternal(t)
	ctx := t.Context()
	for _, c := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"synchronous", "1"}, // NORMAL
		{"foreign_keys", "1"},
		{"busy_timeout", "10000"},
	} {
		var got string
		if err := s.db.w.db.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("writer PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	var qo string
	if err := s.db.r.db.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo); err != nil {
		t.Fatal(err)
	}
	if qo != "1" {
		t.Errorf("reader PRAGMA query_only = %s, want 1", qo)
	}
	var v int
	if err := s.db.r.db.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&v); err != nil || v < 1 {
		t.Errorf("schema version %d, %v", v, err)
	}
}

// TestReadsDoNotWaitForWriter: while a write transaction is open, reads
// are answered from the last commit, and other writes queue behind it.
func TestReadsDoNotWaitForWriter(t *testing.T) {
	s := openInternal(t)
	ctx := t.Context()
	if err := s.CreateProject(ctx, &store.Project{Name: "committed"}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.db.w.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO projects (id, name, created_at, updated_at) VALUES ('x', 'pending', 0, 0)`); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := s.GetProject(rctx, "committed"); err != nil {
		t.Fatalf("read during a write transaction: %v", err)
	}
	if _, _, total, err := s.ListProjects(rctx, store.Page{}); err != nil || total != 1 {
		t.Fatalf("list during a write transaction: total %d, %v; want 1 (the pending row unseen)", total, err)
	}

	wrote := make(chan error, 1)
	go func() { wrote <- s.CreateProject(ctx, &store.Project{Name: "queued"}) }()
	select {
	case err := <-wrote:
		t.Fatalf("a second write ran during the open transaction: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("queued write: %v", err)
	}
	if _, _, total, err := s.ListProjects(ctx, store.Page{}); err != nil || total != 3 {
		t.Fatalf("after commit: total %d, %v; want 3", total, err)
	}
}

// TestRefusesNewerSchema: a binary must not run on a schema a newer one
// migrated.
func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.w.db.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(t.Context(), path); err == nil {
		s.Close()
		t.Fatal("Open succeeded on a database with a newer schema")
	}
}

// TestRebind: the shared queries' PostgreSQL syntax becomes SQLite's:
// placeholders in order become '?', others keep their numbers (a reused
// $1 stays one argument), casts and row-lock clauses go.
func TestRebind(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1 FROM t WHERE id = $1 OR name = $1 ORDER BY id <> $1 LIMIT $2`,
			`SELECT 1 FROM t WHERE id = ?1 OR name = ?1 ORDER BY id <> ?1 LIMIT ?2`},
		{`SELECT $1::text, $3::bytea, $5::timestamptz WHERE $1::text = ''`, `SELECT ?1, ?3, ?5 WHERE ?1 = ''`},
		{"SELECT 1 FROM projects WHERE id = $1 FOR UPDATE", "SELECT 1 FROM projects WHERE id = ?"},
		{"WITH p AS (SELECT 1 FROM projects WHERE id = $1\n\tFOR KEY SHARE) SELECT", "WITH p AS (SELECT 1 FROM projects WHERE id = ?) SELECT"},
		{"UPDATE b SET x = $1 WHERE id = $2 FOR NO KEY UPDATE", "UPDATE b SET x = ? WHERE id = ?"},
		{"UPDATE b SET x = $2 WHERE id = $1", "UPDATE b SET x = ?2 WHERE id = ?1"},
		{"SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11", "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?"},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStatementsPreparedOnce: a query run again, in a transaction or not,
// reuses the statement prepared the first time.
func TestStatementsPreparedOnce(t *testing.T) {
	s := openInternal(t)
	ctx := t.Context()
	p := &store.Project{Name: "p"}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	count := func(c *conn) (n int) {
		c.stmts.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	w, r := count(s.db.w), count(s.db.r)
	for i := range 3 {
		if err := s.CreateProject(ctx, &store.Project{Name: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetProject(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	if w2, r2 := count(s.db.w), count(s.db.r); w2 != w || r2 != r+1 {
		t.Errorf("statements after repeating: writer %d -> %d, reader %d -> %d; want one new reader statement", w, w2, r, r2)
	}
}
