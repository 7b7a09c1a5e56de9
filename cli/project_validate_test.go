package cli

import (
	"testing"

	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/projectcases"
)

// TestProjectCreateFlagsSharedTable: `scion project create` refuses, as a
// usage error before the Hub is asked, the values of the shared table the
// Hub refuses, and creates the rest.
func TestProjectCreateFlagsSharedTable(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	for _, tc := range projectcases.Cases {
		args := []string{"project", "create", tc.Req.Name}
		for flag, v := range map[string]string{"--git-remote": tc.Req.GitRemote, "--sharing-mode": tc.Req.SharingMode,
			"--default-broker": tc.Req.DefaultBroker, "--active-profile": tc.Req.ActiveProfile} {
			if v != "" {
				args = append(args, flag, v)
			}
		}
		before := routeRequests(t, e, "POST /api/v1/projects")
		r := runCLI(t, "", args...)
		switch {
		case tc.OK && r.code != 0:
			t.Errorf("%s: refused (exit %d): %s", tc.Name, r.code, r.err)
		case !tc.OK && r.code != 2:
			t.Errorf("%s: exit %d, want 2 (a usage error): %s", tc.Name, r.code, r.err)
		case !tc.OK && routeRequests(t, e, "POST /api/v1/projects") != before:
			t.Errorf("%s: sent to the Hub", tc.Name)
		}
	}
}
