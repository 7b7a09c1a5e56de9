package cli

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
)

// TestHubEntryWithoutTokenSendsNone: `scion --hub ro ...` for an entry
// that is not signed in sends no token (not the admin entry's with the
// same URL) and tells the user to sign in to that entry.
func TestHubEntryWithoutTokenSendsNone(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	l, err := config.LoadHubList()
	if err != nil {
		t.Fatal(err)
	}
	l.Hubs["admin"] = &config.HubEntry{URL: e.URL, Token: e.AdminToken}
	l.Hubs["ro"] = &config.HubEntry{URL: e.URL}
	l.Current = "admin"
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	before := hubRequests(t, e)
	r := runCLI(t, "", "--hub", "ro", "list")
	if r.code != exitError {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, exitError, r.out, r.err)
	}
	for _, want := range []string{"unauthorized", "scion hub auth login --hub ro"} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr %q does not mention %q", r.err, want)
		}
	}
	if hubRequests(t, e) == before {
		t.Fatal("the CLI sent nothing to the Hub")
	}
	// The Hub says so when a request carries no credential at all (a
	// wrong one is "invalid or expired token").
	if !strings.Contains(r.err, "authentication required") {
		t.Errorf("stderr %q: the request carried a credential, want none", r.err)
	}
	// The signed-in entry still works.
	mustRun(t, "--hub", "admin", "list")
}
