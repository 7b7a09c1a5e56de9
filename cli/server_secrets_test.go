package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestLoadSecretsKey(t *testing.T) {
	home := setHome(t)
	k1, err := loadSecretsKey("")
	if err != nil || len(k1) != 32 {
		t.Fatalf("first start makes a key: %v", err)
	}
	st, err := os.Stat(filepath.Join(home, "hub-secrets.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	k2, err := loadSecretsKey("")
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("a restart reads the same key: %v", err)
	}
	if _, err := loadSecretsKey(filepath.Join(home, "missing.key")); err == nil {
		t.Fatal("an explicit --secrets-key-file that does not exist is an error, not a new key")
	}
	bad := filepath.Join(home, "bad.key")
	_ = os.WriteFile(bad, []byte("short\n"), 0o600)
	if _, err := loadSecretsKey(bad); err == nil {
		t.Fatal("a malformed key is refused")
	}
}
