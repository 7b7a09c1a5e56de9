package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/scion-go/scion/config"
)

// loadSecretsKey reads the Hub's secrets key (64 hex digits) from path, or
// from <scion home>/hub-secrets.key, creating that file (0600) with a new
// random key on first start. The key lives beside the database, not in
// it; a team Hub should point --secrets-key-file at a file its secret
// manager provides. A key file that group or others can read is refused:
// with it and a copy of the database anyone could mint agent tokens.
func loadSecretsKey(path string) ([]byte, error) {
	create := path == ""
	if create {
		path = config.Path("hub-secrets.key")
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		f, werr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if werr == nil {
			_, werr = f.WriteString(hex.EncodeToString(key) + "\n")
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
		}
		if werr != nil && !errors.Is(werr, fs.ErrExist) {
			return nil, fmt.Errorf("secrets key %s: %w", path, werr)
		}
		b, err = os.ReadFile(path) // another process may have won the create
	}
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if err := checkKeyFileMode(path); err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("secrets key %s: want 64 hex digits (32 bytes)", path)
	}
	return key, nil
}

// checkKeyFileMode refuses a secrets key file that group or others may
// read or write (the file a symlink points to, as in a Kubernetes secret
// volume, whose default mode 0644 must be set to 0400 or 0600).
func checkKeyFileMode(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("secrets key: %w", err)
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("secrets key %s is accessible to group or others (mode %04o): run 'chmod 600 %s' and start again", path, m, path)
	}
	return nil
}
