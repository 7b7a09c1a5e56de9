package hub

import (
	"testing"

	"github.com/scion-go/scion/hub/authz"
)

// TestCallerKeys: the caller a busy connection counts for is the
// accountable principal, so a user's access tokens share the user's cap.
func TestCallerKeys(t *testing.T) {
	for _, tc := range []struct {
		c    Caller
		want string
	}{
		{Caller{Kind: CallerUser, ID: "u1", UserID: "u1"}, "user:u1"},
		{Caller{Kind: CallerToken, ID: "tok9", UserID: "u1", ProjectID: "p"}, "user:u1"},
		{Caller{Kind: CallerAgent, ID: "a7", ProjectID: "p"}, "agent:a7"},
		{Caller{Kind: CallerBroker, ID: "b3"}, string(authz.Broker) + ":b3"},
	} {
		if got := tc.c.Principal(); got != tc.want {
			t.Errorf("%+v counts as %q, want %q", tc.c, got, tc.want)
		}
	}
}
