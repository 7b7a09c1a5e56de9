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
// no caller and of failed authentications (identity.RateLimits).
type RateLimits = identity.RateLimits

// DefaultRateLimits are the limits a Hub has unless its options say
// otherwise (identity.DefaultRateLimits).
func DefaultRateLimits() RateLimits { return identity.DefaultRateLimits() }

// BootstrapAdminID is the user the workstation Hub (and a fresh team Hub)
// creates as its first admin.
const BootstrapAdminID = identity.BootstrapAdminID

// BootstrapAdmin makes sure the bootstrap admin exists and returns a fresh
// bearer token for it, never logged (identity.Service.BootstrapAdmin).
func (s *Server) BootstrapAdmin(ctx context.Context) (string, error) { return s.id.BootstrapAdmin(ctx) }

// CreateUserToken creates a user with a role (if missing) and returns a
// token for it (identity.Service.CreateUserToken).
func (s *Server) CreateUserToken(ctx context.Context, id, role string) (string, error) {
	return s.id.CreateUserToken(ctx, id, role)
}
