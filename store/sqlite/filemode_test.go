package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scion-go/scion/store/sqlite"
)

// TestDatabaseFilesArePrivate: with a umask that lets everyone read, the
// database and its WAL and shared-memory files are still created 0600,
// and a database file that group or others can read is refused with the
// chmod fix (issue 12, item 6).
func TestDatabaseFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "hub.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting(ctx, "k", []byte("v")); err != nil { // the WAL gets a frame
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}
	s.Close()

	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		s, err := sqlite.Open(ctx, path)
		if err == nil {
			s.Close()
			t.Fatalf("a %04o database opened", mode)
		}
		if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("error %q does not name the file and the fix", err)
		}
	}
	// A stale world-readable WAL from an older version is made private.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(path+"-wal", nil, 0o644)
	_ = os.Chmod(path+"-wal", 0o644)
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := os.Stat(path + "-wal"); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("stale WAL: %v %v", st.Mode().Perm(), err)
	}
}
