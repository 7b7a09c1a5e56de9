// The agent side of agent tokens. Inside an agent the CLI calls the Hub
// with the agent's token: SCION_AGENT_TOKEN from the container's
// environment, or, when it lasts longer, the one in $HOME/.scion/agent-
// token. Tokens expire (api.DefaultAgentTokenTTL on a default Hub); once
// less than half of its lifetime is left, the CLI trades the token for a
// new one (POST /api/v1/auth/agent-token) and keeps it in that file, since
// a running container's environment cannot change. The broker writes the
// same file when the Hub starts, restarts or resumes the agent. An agent
// whose CLI is not run for a whole lifetime is locked out until it is
// restarted: expiry is the point.

package hubconn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// agentTokenPath is where the agent's renewed token is kept: under HOME,
// where the broker writes it too ("" when there is no home).
func agentTokenPath() string {
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return ""
	}
	return filepath.Join(h, filepath.FromSlash(api.AgentTokenFile))
}

func readAgentTokenFile(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 16<<10 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// tokenEnd orders tokens of one agent: the later expiry wins (a token of
// an older Hub has none; its issue time stands in).
func tokenEnd(c api.AgentTokenClaims) int64 {
	if c.ExpiresAt != 0 {
		return c.ExpiresAt
	}
	return c.IssuedAt
}

// pickAgentToken chooses between the environment's token and the stored
// one: the stored one only if it is the same agent's (SCION_AGENT_ID, or
// the environment token's agent) and lasts longer. A file left by another
// agent in a shared home is never used.
func pickAgentToken(envTok, fileTok, agentID string) string {
	fc, ok := api.ReadAgentTokenClaims(fileTok)
	if !ok {
		return envTok
	}
	ec, envOK := api.ReadAgentTokenClaims(envTok)
	switch {
	case envOK && fc.AgentID != ec.AgentID:
		return envTok
	case !envOK && (agentID == "" || fc.AgentID != agentID):
		return envTok
	case agentID != "" && fc.AgentID != agentID:
		return envTok
	case envOK && tokenEnd(fc) <= tokenEnd(ec):
		return envTok
	}
	return fileTok
}

// NeedsRenewal: renew once less than half of the token's lifetime is
// left, so a CLI run at least that often never holds an expired token. A
// token without an expiry (an older Hub's) is renewed to get one.
func NeedsRenewal(c api.AgentTokenClaims, now time.Time) bool {
	if c.ExpiresAt == 0 {
		return true
	}
	exp := time.Unix(c.ExpiresAt, 0)
	life := exp.Sub(time.Unix(c.IssuedAt, 0))
	return exp.Sub(now) < life/2
}

// Now is the CLI's clock for its agent token's lifetime (time.Now;
// a test moves it with the Hub's).
var Now = time.Now

// RenewAgentToken renews t's agent token when it is due and stores the new
// one. Any failure keeps the current token: the call it was made for then
// gets the Hub's own answer (401 once the token has expired).
func RenewAgentToken(t *Target, now time.Time) {
	c, ok := api.ReadAgentTokenClaims(t.Token)
	if !ok || !NeedsRenewal(c, now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nt, err := NewClient(t).RefreshAgentToken(ctx)
	if err != nil || nt.Token == "" {
		return
	}
	t.Token = nt.Token
	if t.AgentTokenFile != "" {
		_ = config.WriteFileAtomic(t.AgentTokenFile, []byte(nt.Token+"\n"), 0o600)
	}
}
