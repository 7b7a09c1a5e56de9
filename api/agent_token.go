package api

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// Agent tokens: sca_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>,
// signed with the Hub's persistent key. They expire (DefaultAgentTokenTTL
// unless the Hub is configured otherwise); a running agent renews its
// token before that with
//
//	POST /api/v1/auth/agent-token   (the agent's current token) -> AgentToken
//
// A renewal retires the token it was made with: that token works for
// AgentTokenGrace more, and a renewal with it within the grace answers
// the same new token again (a lost answer, or two renewals at once), never
// a newer one; after the grace it is refused (401) like an expired one.
//
// The scion CLI inside an agent does so by itself when less than half of
// its token's lifetime is left, and keeps the new token in
// $HOME/AgentTokenFile, which it prefers over SCION_AGENT_TOKEN when it is
// the same agent's and lasts longer (the environment of a running
// container cannot change). The broker writes a fresh token to the same
// file when the Hub starts, restarts or resumes the agent.
const (
	AgentTokenPrefix     = "sca_"
	DefaultAgentTokenTTL = 24 * time.Hour
	AgentTokenFile       = ".scion/agent-token"
)

// AgentTokenClaims are what an agent token says. Only the Hub verifies
// them; the Hub decides with the agent's stored record (a deleted agent's
// tokens die with it).
type AgentTokenClaims struct {
	AgentID   string   `json:"a"`
	ProjectID string   `json:"p"`
	Role      string   `json:"r,omitempty"`
	Chain     []string `json:"c,omitempty"`
	IssuedAt  int64    `json:"t"`
	// ExpiresAt is in Unix seconds; 0 in tokens of older Hubs, which
	// expire IssuedAt plus the Hub's lifetime.
	ExpiresAt int64 `json:"e,omitempty"`
	// Generation is the agent's token generation the token was minted
	// in (0 in tokens of older Hubs). A renewal moves the agent to the
	// next generation; the Hub then accepts the previous one only for
	// AgentTokenGrace.
	Generation int64 `json:"g,omitempty"`
}

// AgentTokenGrace is how long the token an agent renewed keeps working
// after the renewal: for the agent's requests already in flight with it.
// After it the old token is refused, renewals with it included, so a
// copy of a token that leaked dies at the agent's next renewal.
const AgentTokenGrace = time.Minute

// ReadAgentTokenClaims reads the claims of an agent token WITHOUT checking
// its signature: for an agent to learn when its own token expires. Never
// use it to decide access.
func ReadAgentTokenClaims(tok string) (AgentTokenClaims, bool) {
	var c AgentTokenClaims
	p, _, ok := strings.Cut(strings.TrimPrefix(tok, AgentTokenPrefix), ".")
	if !ok || !strings.HasPrefix(tok, AgentTokenPrefix) {
		return c, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || json.Unmarshal(raw, &c) != nil || c.AgentID == "" {
		return c, false
	}
	return c, true
}

// AgentToken is a new agent token, from POST /api/v1/auth/agent-token.
type AgentToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}
