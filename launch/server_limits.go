package launch

import (
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub/transport"
)

// serveLimits checks the server's connection flags and fits the global
// connection cap under the process's file descriptor limit (Go raises the
// soft limit to the hard one at start; fdLimit reads what it got).
func serveLimits(c config.ServeLimits) (transport.ServeLimits, error) {
	l := transport.ServeLimits{ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout,
		IdleTimeout: c.IdleTimeout, MaxConnsPerAddr: c.MaxConnsPerAddr, MaxConns: c.MaxConns,
		MaxConnsPerCaller: c.MaxConnsPerCaller, BodyStall: c.BodyStall, BodyMinRate: c.BodyMinRate}
	for _, d := range []struct {
		name string
		v    int64
	}{
		{"--read-header-timeout", int64(l.ReadHeaderTimeout)}, {"--read-timeout", int64(l.ReadTimeout)},
		{"--write-timeout", int64(l.WriteTimeout)}, {"--idle-timeout", int64(l.IdleTimeout)},
		{"--read-body-timeout", int64(l.BodyStall)},
	} {
		if d.v <= 0 {
			return l, usageErrorf("%s must be a positive duration", d.name)
		}
	}
	if l.MaxConnsPerAddr < 0 {
		return l, usageErrorf("--max-connections-per-address must be 0 (no cap) or more")
	}
	if l.MaxConnsPerCaller < 0 {
		return l, usageErrorf("--max-connections-per-caller must be 0 (no cap) or more")
	}
	if l.BodyMinRate < 0 {
		return l, usageErrorf("--read-body-min-rate must be 0 (none) or more bytes per second")
	}
	if l.MaxConns <= 0 {
		return l, usageErrorf("--max-connections must be positive")
	}
	l.MaxConns = transport.MaxConnsForFDLimit(l.MaxConns, fdLimit())
	return l, nil
}
