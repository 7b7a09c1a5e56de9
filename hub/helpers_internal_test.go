package hub

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/store/sqlite"
)

// newInternalServer is a Hub on a fresh SQLite store, with no HTTP
// listener, for tests of the package's internals. Both close with t.
func newInternalServer(t *testing.T) (*Server, *sqlite.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(ctx, Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, st
}
