package identity

import (
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func TestJudgeTokenGeneration(t *testing.T) {
	renewed := time.Unix(1_700_000_000, 0)
	never := &store.Agent{TokenGeneration: 0}
	once := &store.Agent{TokenGeneration: 1, TokenRenewedAt: renewed}
	for _, tc := range []struct {
		name string
		gen  int64
		a    *store.Agent
		now  time.Time
		want tokenStanding
	}{
		{"never renewed, its generation", 0, never, renewed, tokenCurrent},
		{"never renewed, a generation ahead", 1, never, renewed, tokenRetired},
		{"current after a renewal", 1, once, renewed.Add(time.Hour), tokenCurrent},
		{"the previous at the renewal", 0, once, renewed, tokenPrevious},
		{"the previous just inside the grace", 0, once, renewed.Add(api.AgentTokenGrace - time.Millisecond), tokenPrevious},
		{"the previous at the grace's end", 0, once, renewed.Add(api.AgentTokenGrace), tokenRetired},
		{"two generations back", 0, &store.Agent{TokenGeneration: 2, TokenRenewedAt: renewed}, renewed, tokenRetired},
		{"ahead of the agent (a restored database)", 2, once, renewed, tokenRetired},
		{"previous without a renewal time", 0, &store.Agent{TokenGeneration: 1}, renewed, tokenRetired},
	} {
		if got := judgeTokenGeneration(tc.gen, tc.a, tc.now); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
