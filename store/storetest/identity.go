package storetest

import (
	"reflect"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// testAgentIdentity: an agent's scopes, delegation chain, passthrough and
// secret names are written by CreateAgent and by every UpdateAgent path
// (in store/sqlite a status update and a key change run different
// statements; EnqueueDispatch runs a third), and read back by every read.
func testAgentIdentity(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "b")
	a := &store.Agent{Slug: "worker", ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated,
		Scopes: []string{"agents:read"}, DelegationChain: []string{"user:u1"}, Passthrough: "gcp",
		SecretNames: []string{"GITHUB_TOKEN"}}
	must(t, s.CreateAgent(ctx, a, nil))
	// Whole records compare equal (reflect.DeepEqual: nil and empty lists
	// apart) through every read.
	check := func(what string) {
		t.Helper()
		got, err := s.GetAgent(ctx, a.ID)
		must(t, err)
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("after %s: GetAgent read %+v, want %+v", what, got, a)
		}
		got, err = s.GetAgentBySlug(ctx, a.ProjectID, a.Slug)
		must(t, err)
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("after %s: GetAgentBySlug read %+v, want %+v", what, got, a)
		}
		items, _, _, err := s.ListAgents(ctx, store.AgentFilter{ProjectID: p.ID}, store.Page{})
		must(t, err)
		if len(items) != 1 || !reflect.DeepEqual(items[0], a) {
			t.Fatalf("after %s: ListAgents read %+v, want [%+v]", what, items, a)
		}
	}
	check("create")

	// A status update (same slug, project and broker).
	a.Phase = api.PhaseRunning
	a.Scopes = []string{"agents:read", "agents:write", "secrets:read"}
	a.DelegationChain = []string{"user:u1", "agent:a7"}
	a.Passthrough = ""
	a.SecretNames = append(a.SecretNames, "NPM_TOKEN")
	must(t, s.UpdateAgent(ctx, a))
	check("status update")

	// nil and empty lists stay apart.
	a.Scopes, a.DelegationChain, a.SecretNames = nil, []string{}, nil
	a.Passthrough = "aws"
	must(t, s.UpdateAgent(ctx, a))
	check("clearing")

	// A change of the indexed keys.
	b2 := newBroker(t, s, "b2")
	a.BrokerID, a.Slug = b2.ID, "worker-2"
	a.Scopes, a.DelegationChain, a.SecretNames = []string{}, nil, []string{"ONLY"}
	must(t, s.UpdateAgent(ctx, a))
	check("key change")

	// The agent written with a queued dispatch.
	next := *a
	next.Phase, next.ContainerStatus = api.PhaseStopped, api.ContainerStopQueued
	next.Scopes, next.Passthrough = []string{"agents:read"}, "gcp"
	created, err := s.EnqueueDispatch(ctx, stopFor(b2, &next), &next)
	must(t, err)
	if !created {
		t.Fatal("EnqueueDispatch did not create the dispatch")
	}
	*a = next
	check("enqueue dispatch")

	// The sparse agent has none of it.
	sparse := newAgent(t, s, p.ID, "sparse", b.ID)
	got, err := s.GetAgent(ctx, sparse.ID)
	must(t, err)
	if got.Scopes != nil || got.DelegationChain != nil || got.Passthrough != "" || got.SecretNames != nil {
		t.Fatalf("sparse agent read back as %+v", got)
	}
}
