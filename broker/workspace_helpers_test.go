package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

// localRoots is gitrepo.LocalRoots where allow, else none.
func localRoots(allow bool) []string {
	if allow {
		return gitrepo.LocalRoots
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func wantFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if !exists(filepath.Join(dir, n)) {
			t.Errorf("%s has no %s", dir, n)
		}
	}
}
