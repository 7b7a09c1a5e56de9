package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/store/sqlite"
)

// TestMigrationKeepsOldAgents: records written by a schema-1 binary read
// back after the upgrades with the later columns empty: an agent with no
// ports and no identity fields, a project with no creator, a user with no
// OIDC identity.
func TestMigrationKeepsOldAgents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	init, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(init),
		`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO projects (id, name, created_at, updated_at) VALUES ('p1', 'p', 0, 0)`,
		`INSERT INTO agents (id, slug, project_id, phase, version, created_at, updated_at) VALUES ('a1', 'old', 'p1', 'stopped', 1, 0, 0)`,
		`INSERT INTO users (id, name, created_at) VALUES ('u1', 'admin', 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// SQLite made the old file 0644; the Hub refuses that until the
	// operator runs the chmod its error names (TestDatabaseFilesArePrivate).
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.GetAgent(t.Context(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if a.Slug != "old" || a.Ports != nil || a.PortMappings != nil || a.Scopes != nil || a.DelegationChain != nil ||
		a.Passthrough != "" || a.SecretNames != nil {
		t.Fatalf("old agent read back as %+v", a)
	}
	if p, err := s.GetProject(t.Context(), "p1"); err != nil || p.CreatedBy != "" {
		t.Fatalf("old project read back as %+v, %v", p, err)
	}
	if u, err := s.GetUser(t.Context(), "u1"); err != nil || u.Name != "admin" || u.Issuer != "" || u.Subject != "" {
		t.Fatalf("old user read back as %+v, %v", u, err)
	}
}
