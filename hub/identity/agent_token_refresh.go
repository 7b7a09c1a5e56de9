// Agent token renewal: an agent trades its current, unexpired token for a
// new one with a full lifetime, of the agent's next token generation
// (agent_token_generation.go). The caller was authenticated by that token
// (an expired or retired one never gets here: 401), so the new token
// speaks for the same agent, read again from the store.
//
// The renewal retires the token it was made with after api.AgentTokenGrace.
// Within the grace the old token renews to the same new token again
// (minted anew from the renewal's stored second, so byte for byte the
// one the first renewal answered): an answer lost on the way, or two
// renewals racing, leave the agent with a working token and never move
// the generation twice. After the grace a renewal with it is refused, so
// a leaked token cannot keep itself alive past the agent's next renewal.

package identity

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/store"
)

func (s *Service) handleRefreshAgentToken(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	httpapi.MarkChecked(ctx)
	if err := httpapi.Refusal(s.log, c, authz.AgentTokenRefresh, authz.CanRefreshAgentToken(*c), nil); err != nil {
		return 0, nil, err
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// The compare-and-set below fails only for a renewal that raced this
	// one; the second look then finds this token in its grace.
	for range 2 {
		claims, a, st, err := s.checkAgentToken(ctx, tok)
		if err != nil { // deleted or retired since the token was checked
			return 0, nil, api.Unauthorized("invalid or expired token")
		}
		at := s.opts.Now().Truncate(time.Second)
		if st == tokenPrevious {
			// Renewed already: the same new token again.
			at = a.TokenRenewedAt
		} else {
			err := s.store.RenewAgentToken(ctx, a.ID, claims.Generation, at)
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			if isNotFound(err) {
				return 0, nil, api.Unauthorized("invalid or expired token")
			}
			if err != nil {
				return 0, nil, err
			}
			a.TokenGeneration, a.TokenRenewedAt = claims.Generation+1, at
		}
		nt, exp := s.mintAgentTokenAt(a, at)
		s.log.Debug("agent token renewed", "agent", a.ID, "token_generation", a.TokenGeneration, "expires", exp)
		return http.StatusOK, api.AgentToken{Token: nt, ExpiresAt: exp.UTC()}, nil
	}
	return 0, nil, api.Errorf(api.CodeConflict, "the agent's token was renewed twice at once; renew again")
}
