package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestHubBrokersSet: an admin sets a broker's own limit, which the Hub
// then enforces as its effective limit, and drops it again to inherit the
// hub-wide one; auto-provide changes; a usage error never reaches the Hub;
// a member's limit change is refused by the Hub and changes nothing.
func TestHubBrokersSet(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	useHub(t, "team", e.URL, e.AdminToken)

	r := mustRun(t, "hub", "brokers", "set", "b1", "--max-agents", "7")
	if got := strings.Join(strings.Fields(r.out), " "); !strings.Contains(got, "limit: 7 (its own)") {
		t.Errorf("set --max-agents answered:\n%s", r.out)
	}
	b, err := e.Admin.GetBroker(ctx, "b1")
	if err != nil || b.Settings.MaxAgents == nil || *b.Settings.MaxAgents != 7 || b.EffectiveMaxAgents != 7 {
		t.Fatalf("broker after set: %+v, %v", b, err)
	}

	r = mustRun(t, "hub", "brokers", "set", "b1", "--inherit-max-agents", "--auto-provide=false", "-o", "json")
	var out api.RuntimeBroker
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}
	if out.Settings.MaxAgents != nil || out.EffectiveMaxAgents != api.DefaultMaxAgentsPerBroker || out.AutoProvide {
		t.Errorf("after --inherit-max-agents --auto-provide=false: %+v", out)
	}

	before := hubRequests(t, e)
	for _, args := range [][]string{
		{"hub", "brokers", "set", "b1"},
		{"hub", "brokers", "set", "b1", "--max-agents", "-1"},
		{"hub", "brokers", "set", "b1", "--max-agents", "3", "--inherit-max-agents"},
		{"hub", "brokers", "set"},
	} {
		if r := runCLI(t, "", args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s", args, r.code, r.err)
		}
	}
	if n := hubRequests(t, e); n != before {
		t.Errorf("usage errors reached the Hub (%d requests)", n-before)
	}

	member := e.UserToken(t, "mia", api.RoleMember)
	useHub(t, "team", e.URL, member)
	if r := runCLI(t, "", "hub", "brokers", "set", "b1", "--max-agents", "1"); r.code == 0 || !strings.Contains(r.err, "forbidden") {
		t.Errorf("a member's limit change: exit %d\n%s", r.code, r.err)
	}
	if b, err := e.Admin.GetBroker(ctx, "b1"); err != nil || b.Settings.MaxAgents != nil {
		t.Errorf("a refused limit change wrote: %+v, %v", b, err)
	}
}
