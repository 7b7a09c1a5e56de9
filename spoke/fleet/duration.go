package fleet

import (
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
)

// MaxTimeout bounds every duration a cluster block sets; MinTimeout and
// MinKeepalive are the shortest a timeout and a keepalive interval may be
// (shorter is a mistake: every request would fail, or keepalives would
// flood the bastion).
const (
	MaxTimeout   = 10 * time.Minute
	MinTimeout   = 100 * time.Millisecond
	MinKeepalive = time.Second
)

// Duration is a duration written as a string ("5s", "1m30s") in
// clusters.toml and settings.yaml.
type Duration struct{ D time.Duration }

// UnmarshalText reads "5s"; a bare number is refused (its unit would be a
// guess).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like \"10s\"", api.RedactURL(string(b)))
	}
	d.D = v
	return nil
}

// MarshalText writes the duration back as a string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.D.String()), nil }

// parseSetting reads a settings.yaml duration ("" is zero).
func parseSetting(s string) (Duration, error) {
	var d Duration
	if s == "" {
		return d, nil
	}
	return d, d.UnmarshalText([]byte(s))
}
