package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub/transport"
)

// TestServeLimitsFlags: the server's timeout and cap flags are checked,
// and the global cap is fitted under the descriptor limit.
func TestServeLimitsFlags(t *testing.T) {
	ok := config.DefaultServeLimits()
	for _, tc := range []struct {
		name string
		edit func(*config.ServeLimits)
		err  string
	}{
		{"defaults", func(*config.ServeLimits) {}, ""},
		{"no per-address cap", func(l *config.ServeLimits) { l.MaxConnsPerAddr = 0 }, ""},
		{"zero read timeout", func(l *config.ServeLimits) { l.ReadTimeout = 0 }, "--read-timeout"},
		{"negative write timeout", func(l *config.ServeLimits) { l.WriteTimeout = -time.Second }, "--write-timeout"},
		{"zero idle timeout", func(l *config.ServeLimits) { l.IdleTimeout = 0 }, "--idle-timeout"},
		{"zero header timeout", func(l *config.ServeLimits) { l.ReadHeaderTimeout = 0 }, "--read-header-timeout"},
		{"negative per-address cap", func(l *config.ServeLimits) { l.MaxConnsPerAddr = -1 }, "--max-connections-per-address"},
		{"zero global cap", func(l *config.ServeLimits) { l.MaxConns = 0 }, "--max-connections"},
		{"no per-caller cap", func(l *config.ServeLimits) { l.MaxConnsPerCaller = 0 }, ""},
		{"negative per-caller cap", func(l *config.ServeLimits) { l.MaxConnsPerCaller = -1 }, "--max-connections-per-caller"},
		{"zero body timeout", func(l *config.ServeLimits) { l.BodyStall = 0 }, "--read-body-timeout"},
		{"no body rate", func(l *config.ServeLimits) { l.BodyMinRate = 0 }, ""},
		{"negative body rate", func(l *config.ServeLimits) { l.BodyMinRate = -1 }, "--read-body-min-rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ok
			tc.edit(&l)
			got, err := serveLimits(l)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.MaxConnsPerCaller != l.MaxConnsPerCaller || got.BodyStall != l.BodyStall || got.BodyMinRate != l.BodyMinRate {
				t.Fatalf("the Hub gets %+v from %+v", got, l)
			}
			if n := fdLimit(); n > 0 && uint64(got.MaxConns)+transport.FDReserve > n {
				t.Fatalf("MaxConns %d + reserve %d over the descriptor limit %d", got.MaxConns, transport.FDReserve, n)
			}
		})
	}
}
