package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// TestSecretsKeyFileMustBePrivate: the Hub refuses a secrets key file that
// group or others can read, naming it and the fix (issue 12, item 6).
func TestSecretsKeyFileMustBePrivate(t *testing.T) {
	home := setHome(t)
	if _, err := loadSecretsKey(""); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(home, "hub-secrets.key")
	for _, mode := range []os.FileMode{0o644, 0o640, 0o660, 0o604} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{"", p} {
			_, err := loadSecretsKey(arg)
			if err == nil || !strings.Contains(err.Error(), "chmod 600 "+p) {
				t.Errorf("mode %04o, --secrets-key-file %q: err %v, want a refusal naming the chmod fix", mode, arg, err)
			}
		}
	}
	if err := os.Chmod(p, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := loadSecretsKey(p); err != nil {
		t.Errorf("a 0400 key file is refused: %v", err)
	}
}
