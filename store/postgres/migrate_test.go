package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store/postgres"
	"github.com/scion-go/scion/store/storetest"
)

// TestMigrationKeepsOldAgents: records written by a schema-1 binary read
// back after the upgrades with the later columns empty: an agent with no
// ports and no identity fields, a project with no creator, a user with no
// OIDC identity.
func TestMigrationKeepsOldAgents(t *testing.T) {
	url := storetest.NewPostgresDB(t)
	init, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		string(init),
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO schema_migrations (version, name) VALUES (1, '0001_init.sql')`,
		`INSERT INTO projects (id, name, created_at, updated_at) VALUES ('p1', 'p', now(), now())`,
		`INSERT INTO agents (id, slug, project_id, phase, version, created_at, updated_at) VALUES ('a1', 'old', 'p1', 'stopped', 1, now(), now())`,
		`INSERT INTO users (id, name, created_at) VALUES ('u1', 'admin', now())`,
	} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
	if err := conn.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(t.Context(), url)
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
