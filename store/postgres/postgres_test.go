package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/postgres"
	"github.com/scion-go/scion/store/storetest"
)

func open(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), storetest.NewPostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

// TestConcurrentOpen: Hub replicas starting together on a new database
// all migrate successfully, and each migration is applied once.
func TestConcurrentOpen(t *testing.T) {
	url := storetest.NewPostgresDB(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, distinct int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n == 0 || n != distinct {
		t.Fatalf("schema_migrations has %d rows, %d versions", n, distinct)
	}
}

// TestReopen: data survives closing the store, and opening a migrated
// database again is a no-op.
func TestReopen(t *testing.T) {
	url := storetest.NewPostgresDB(t)
	s, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	p := &store.Project{Name: "kept"}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.GetProject(t.Context(), "kept")
	if err != nil || *got != *p {
		t.Fatalf("after reopen: %+v, %v; want %+v", got, err, p)
	}
}

func BenchmarkCreateAgent(b *testing.B) { storetest.BenchCreateAgent(b, open(b)) }

func BenchmarkCreateAndUpdateAgent(b *testing.B) { storetest.BenchCreateAndUpdateAgent(b, open(b)) }

func BenchmarkCreateAndUpdateAgentParallel(b *testing.B) {
	storetest.BenchCreateAndUpdateAgentParallel(b, open(b))
}
