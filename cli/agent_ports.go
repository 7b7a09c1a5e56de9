package cli

import (
	"strconv"
	"strings"

	"github.com/scion-go/scion/api"
)

// checkPorts validates --port values before they reach the Hub, so a typo
// is a usage error (exit 2) rather than a round trip.
func checkPorts(ports []int) error {
	if err := api.ValidatePorts(ports); err != nil {
		return usageErrorf("--port: %s", api.AsError(err).Message)
	}
	return nil
}

// parsePortRange reads --port-range "FIRST-LAST" ("" is the broker default).
func parsePortRange(s string) ([2]int, error) {
	if s == "" {
		return [2]int{}, nil
	}
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return [2]int{}, usageErrorf("invalid --port-range %q: use FIRST-LAST within 1-65535, e.g. 31000-31999", s)
	}
	return [2]int{a, b}, nil
}

// portsCell renders an agent's published ports for a table.
func portsCell(ms []api.PortMapping) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}
