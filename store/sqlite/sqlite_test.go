package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/sqlite"
	"github.com/scion-go/scion/store/storetest"
)

func open(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
}

func TestOpenRejectsNonFiles(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlite.Open(context.Background(), p); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func BenchmarkCreateAgent(b *testing.B) { storetest.BenchCreateAgent(b, open(b)) }

func BenchmarkCreateAndUpdateAgent(b *testing.B) { storetest.BenchCreateAndUpdateAgent(b, open(b)) }

func BenchmarkCreateAndUpdateAgentParallel(b *testing.B) {
	storetest.BenchCreateAndUpdateAgentParallel(b, open(b))
}
