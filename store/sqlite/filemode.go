package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// The database holds the Hub's credentials (token hashes, sealed signing
// keys, broker secrets), so it and its WAL and shared-memory files are
// readable by their owner only.
const dbFileMode fs.FileMode = 0o600

// privateFileError refuses a credential file that group or others may
// read or write, naming the file and the fix.
func privateFileError(what, path string, mode fs.FileMode) error {
	return fmt.Errorf("%s %s is accessible to group or others (mode %04o); it holds credentials: run 'chmod 600 %s' and start again",
		what, path, mode.Perm(), path)
}

// checkPrivateFile returns an error when the file at path is accessible
// to group or others. A missing file is not an error.
func checkPrivateFile(what, path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return privateFileError(what, path, st.Mode())
	}
	return nil
}

// prepareDBFile creates the database file 0600 before SQLite opens it
// (SQLite would create it 0644 less the umask), or refuses an existing one
// that group or others can read. The explicit chmod makes the mode
// independent of the umask. SQLite gives the -wal and -shm files the mode
// of the database file; privatizeSidecars covers ones left by an older
// version.
func prepareDBFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbFileMode)
	switch {
	case err == nil:
		cerr := f.Chmod(dbFileMode)
		if err := f.Close(); cerr == nil {
			cerr = err
		}
		if cerr != nil {
			return fmt.Errorf("sqlite: create %s: %w", path, cerr)
		}
		return nil
	case errors.Is(err, fs.ErrExist):
		return checkPrivateFile("sqlite: database", path)
	default:
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
}

// privatizeSidecars makes the WAL and shared-memory files 0600.
func privatizeSidecars(path string) error {
	for _, p := range []string{path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Chmod(p, dbFileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqlite: %w", err)
		}
	}
	return nil
}
