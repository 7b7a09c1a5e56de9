package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/agentcases"
)

// TestCreateFlagsSharedCases: `scion create` refuses, as a usage error
// (exit 2) before any create reaches the Hub, exactly the values of the
// shared table that the Hub and the broker refuse, and creates the rest.
func TestCreateFlagsSharedCases(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	useHub(t, "team", e.URL, e.AdminToken)
	for i, tc := range agentcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.OK {
				n := fmt.Sprintf("ok%d", i)
				tc.Agent = &n // every good case its own agent
			}
			before := routeRequests(t, e, "POST /api/v1/agents")
			r := runCLI(t, "", tc.Args("default")...)
			switch {
			case tc.OK && r.code != 0:
				t.Fatalf("refused (exit %d): %s", r.code, r.err)
			case !tc.OK && r.code != 2:
				t.Fatalf("exit %d, want 2 (a usage error): %s%s", r.code, r.out, r.err)
			case !tc.OK && routeRequests(t, e, "POST /api/v1/agents") != before:
				t.Fatalf("a refused create was sent to the Hub: %s", strings.TrimSpace(r.err))
			}
		})
	}
}
