// Agent token renewal: an agent trades its current, unexpired token for a
// new one with a full lifetime. The caller was authenticated by that
// token (an expired one never gets here: 401), so the new token speaks for
// the same agent, read again from the store.

package hub

import (
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
)

func (s *Server) handleRefreshAgentToken(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	markChecked(ctx)
	if err := s.refusal(c, authz.AgentTokenRefresh, authz.CanRefreshAgentToken(*c), nil); err != nil {
		return 0, nil, err
	}
	a, err := s.store.GetAgent(ctx, c.ID)
	if err != nil {
		if isNotFound(err) { // deleted since the token was checked
			return 0, nil, api.Unauthorized("invalid or expired token")
		}
		return 0, nil, err
	}
	tok, exp := s.mintAgentTokenAt(a, s.opts.Now())
	s.log.Debug("agent token renewed", "agent", a.ID, "expires", exp)
	return http.StatusOK, api.AgentToken{Token: tok, ExpiresAt: exp.UTC()}, nil
}
