package hubconn

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
)

// fakeAgentToken is a token with claims c and no valid signature: the CLI
// only reads claims, the Hub alone verifies.
func fakeAgentToken(c api.AgentTokenClaims) string {
	b, _ := json.Marshal(c)
	return api.AgentTokenPrefix + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

func TestPickAgentToken(t *testing.T) {
	env := fakeAgentToken(api.AgentTokenClaims{AgentID: "a1", IssuedAt: 100, ExpiresAt: 200})
	later := fakeAgentToken(api.AgentTokenClaims{AgentID: "a1", IssuedAt: 150, ExpiresAt: 250})
	earlier := fakeAgentToken(api.AgentTokenClaims{AgentID: "a1", IssuedAt: 50, ExpiresAt: 150})
	other := fakeAgentToken(api.AgentTokenClaims{AgentID: "a2", IssuedAt: 150, ExpiresAt: 999})
	for _, tc := range []struct {
		name, env, file, agentID, want string
	}{
		{"no file", env, "", "a1", env},
		{"the file lasts longer", env, later, "a1", later},
		{"the file is older", env, earlier, "a1", env},
		{"the file is another agent's", env, other, "a1", env},
		{"another agent's file, no agent ID", env, other, "", env},
		{"garbage in the file", env, "sca_%%%", "a1", env},
		{"no env token, the file is ours", "", later, "a1", later},
		{"no env token, no agent ID", "", later, "", ""},
		{"no env token, another agent's file", "", other, "a1", ""},
	} {
		if got := pickAgentToken(tc.env, tc.file, tc.agentID); got != tc.want {
			t.Errorf("%s: got %.30q, want %.30q", tc.name, got, tc.want)
		}
	}
}

func TestNeedsRenewal(t *testing.T) {
	iat := time.Unix(1_800_000_000, 0)
	c := api.AgentTokenClaims{AgentID: "a", IssuedAt: iat.Unix(), ExpiresAt: iat.Add(24 * time.Hour).Unix()}
	for _, tc := range []struct {
		name string
		c    api.AgentTokenClaims
		now  time.Time
		want bool
	}{
		{"fresh", c, iat.Add(time.Hour), false},
		{"just before half-life", c, iat.Add(12*time.Hour - time.Second), false},
		{"past half-life", c, iat.Add(12*time.Hour + time.Second), true},
		{"expired", c, iat.Add(25 * time.Hour), true},
		{"an older Hub's token without expiry", api.AgentTokenClaims{AgentID: "a", IssuedAt: iat.Unix()}, iat, true},
	} {
		if got := NeedsRenewal(tc.c, tc.now); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
