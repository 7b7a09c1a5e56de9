// What the Hub's callers (launch, the harnesses, bench) name of
// hub/identity through the hub package: its options' types and the
// bootstrap admin. The work is hub/identity's; these only forward, so
// the callers need not know where it lives.

package hub

import (
	"context"

	"github.com/scion-go/scion/hub/identity"
)

// Rate is a token bucket: PerMinute tokens a minute, up to Burst at once.
type Rate = identity.Rate

// RateLimits are the limits per client address of the routes that need
// no caller and of failed authentications (identity.RateLimits; nil in
// Options is identity.DefaultRateLimits).
type RateLimits = identity.RateLimits

// BootstrapAdminID is the user the workstation Hub (and a fresh team Hub)
// creates as its first admin.
const BootstrapAdminID = identity.BootstrapAdminID

// BootstrapAdmin makes sure the bootstrap admin exists and returns a fresh
// bearer token for it, never logged (identity.Service.BootstrapAdmin).
func (s *Server) BootstrapAdmin(ctx context.Context) (string, error) { return s.id.BootstrapAdmin(ctx) }
