package launch

import (
	"errors"
	"testing"

	"github.com/scion-go/scion/config"
)

// setHome gives the test an empty Scion home.
func setHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("SCION_HOME", home)
	return home
}

func loadSettings(t *testing.T) *config.Settings {
	t.Helper()
	s, err := config.LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// isUsage reports whether the CLI would report err as a usage error (the
// Usage method cli.Daemons looks for).
func isUsage(err error) bool {
	var u interface{ Usage() bool }
	return errors.As(err, &u) && u.Usage()
}
