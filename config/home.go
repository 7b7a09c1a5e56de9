package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// Home is the Scion home directory: $SCION_HOME, else ~/.scion.
func Home() string {
	if h := os.Getenv("SCION_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".scion")
	}
	return ".scion"
}

// Path joins elements under Home.
func Path(elem ...string) string { return filepath.Join(append([]string{Home()}, elem...)...) }

// WriteFileAtomic writes data to path (mode perm, its directory made 0700)
// via a temp file and rename, so a reader never sees a half-written file
// and a crash leaves the old one. The broker (an agent's token file) and
// the CLI (its own renewed token) use it too.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	return nil
}
