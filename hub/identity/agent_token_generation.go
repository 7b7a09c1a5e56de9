// Agent token generations: a renewal retires the token it was made with.
//
// Agent tokens are signed, not stored, so a token cannot be revoked by
// deleting it. Instead every token carries the agent's token generation
// it was minted in (api.AgentTokenClaims.Generation) and the agent's row
// holds the current one (store.Agent.TokenGeneration), moved on by each
// renewal only. A token of the current generation is accepted; one of the
// generation before for api.AgentTokenGrace after the renewal (the
// agent's requests in flight with it); any other is refused. Tokens
// minted at a create, start, restart or resume take the current
// generation and retire nothing: the agent's token in use stays valid.

package identity

import (
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// tokenStanding is how a token's generation stands with its agent.
type tokenStanding int

const (
	tokenRetired  tokenStanding = iota // refused
	tokenCurrent                       // the agent's current generation
	tokenPrevious                      // renewed from less than the grace ago
)

// judgeTokenGeneration decides whether a token minted in generation gen
// still speaks for agent a at now. A generation ahead of the agent's (a
// database restored from before a renewal) is refused like a retired one.
func judgeTokenGeneration(gen int64, a *store.Agent, now time.Time) tokenStanding {
	switch {
	case gen == a.TokenGeneration:
		return tokenCurrent
	case gen == a.TokenGeneration-1 && !a.TokenRenewedAt.IsZero() && now.Before(a.TokenRenewedAt.Add(api.AgentTokenGrace)):
		return tokenPrevious
	}
	return tokenRetired
}
