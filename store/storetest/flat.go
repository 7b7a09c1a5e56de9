package storetest

import (
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// Flat Runtime Brokers (multi-broker spec, "Flat Runtime Brokers
// (experimental)"): a flat broker's record carries its one runtime target,
// an agent placed on it its pin, which no update changes.

func kubeTarget(ctx, ns string) *api.RuntimeTarget {
	return &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: ctx, Namespace: ns}
}

// testBrokerRuntimeTarget: a broker's runtime target round-trips through
// every write and read of a broker; nil (a broker that is not flat) reads
// back nil.
func testBrokerRuntimeTarget(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	flat := &store.Broker{Name: "flat", Status: api.BrokerOnline, RuntimeTarget: kubeTarget("prod", "agents")}
	must(t, s.CreateBroker(ctx, flat))
	plain := newBroker(t, s, "plain")
	must(t, s.LinkProvider(ctx, p.ID, flat.ID))

	got, err := s.GetBroker(ctx, "flat")
	must(t, err)
	equal(t, got, flat)
	equal(t, got.RuntimeTarget, kubeTarget("prod", "agents"))
	got, provides, err := s.GetBrokerForProject(ctx, flat.ID, p.ID)
	must(t, err)
	if !provides {
		t.Fatal("GetBrokerForProject: the linked flat broker does not provide")
	}
	equal(t, got, flat)
	got, err = s.GetBroker(ctx, plain.ID)
	must(t, err)
	if got.RuntimeTarget != nil {
		t.Fatalf("a broker created without a target reads back %+v", *got.RuntimeTarget)
	}
	list, _, _, err := s.ListBrokers(ctx, store.Page{})
	must(t, err)
	equal(t, list, []*store.Broker{flat, plain})

	// UpdateBroker writes the target: changed, then cleared, then set on
	// the broker that had none.
	flat.RuntimeTarget = &api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	must(t, s.UpdateBroker(ctx, flat))
	got, err = s.GetBroker(ctx, flat.ID)
	must(t, err)
	equal(t, got.RuntimeTarget, &api.RuntimeTarget{Type: api.RuntimeTargetDocker})
	flat.RuntimeTarget = nil
	must(t, s.UpdateBroker(ctx, flat))
	got, err = s.GetBroker(ctx, flat.ID)
	must(t, err)
	if got.RuntimeTarget != nil {
		t.Fatalf("a cleared target reads back %+v", *got.RuntimeTarget)
	}
	plain.RuntimeTarget = kubeTarget("dev", "default")
	must(t, s.UpdateBroker(ctx, plain))
	got, err = s.GetBroker(ctx, plain.ID)
	must(t, err)
	equal(t, got, plain)

	// JoinBroker inserts the target build returns.
	now := time.Now()
	must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte("jt"), Name: "joined", ExpiresAt: now.Add(time.Hour)}))
	joined, err := s.JoinBroker(ctx, []byte("jt"), now, func(jt *store.JoinToken) (*store.Broker, error) {
		return &store.Broker{Name: jt.Name, RuntimeTarget: kubeTarget("edge", "ns1")}, nil
	})
	must(t, err)
	got, err = s.GetBroker(ctx, "joined")
	must(t, err)
	equal(t, got, joined)
	equal(t, got.RuntimeTarget, kubeTarget("edge", "ns1"))
}

// testAgentPin: an agent's pin round-trips through every create (the
// plain insert, with a slot, a key, a link, a replacement: on PostgreSQL
// the one-round-trip batch) and every read; nil reads back nil.
func testAgentPin(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "flat")
	pin := func() *api.PinnedRuntimeTarget {
		return &api.PinnedRuntimeTarget{BrokerID: b.ID, RuntimeTarget: *kubeTarget("prod", "agents")}
	}
	limit := 0
	var want []*store.Agent
	for i, o := range []store.CreateAgentOptions{
		{},
		{ReserveLimit: &limit},
		{LinkProvider: true},
		{Key: &store.IdempotencyRecord{Caller: "user:u1", Key: "k1", RequestHash: "h",
			ExpiresAt: time.Now().Add(time.Hour)}},
	} {
		a := &store.Agent{Slug: slug(i), ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated, Pin: pin()}
		_, err := s.CreateAgentWith(ctx, a, o)
		must(t, err)
		got, err := s.GetAgent(ctx, a.ID)
		must(t, err)
		equal(t, got, a)
		equal(t, got.Pin, pin())
		want = append(want, a)
	}
	// Replacing an agent: the new one carries its own pin.
	repl := &store.Agent{Slug: slug(0), ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated,
		Pin: &api.PinnedRuntimeTarget{BrokerID: b.ID, RuntimeTarget: api.RuntimeTarget{Type: api.RuntimeTargetDocker}}}
	_, err := s.CreateAgentWith(ctx, repl, store.CreateAgentOptions{Replace: want[0], ReserveLimit: &limit})
	must(t, err)
	want[0] = repl
	got, err := s.GetAgentBySlug(ctx, p.ID, slug(0))
	must(t, err)
	equal(t, got, repl)

	// No pin: nil.
	plain := newAgent(t, s, p.ID, "plain", b.ID)
	got, err = s.GetAgentBySlug(ctx, p.ID, "plain")
	must(t, err)
	if got.Pin != nil {
		t.Fatalf("an agent created without a pin reads back %+v", *got.Pin)
	}
	want = append(want, plain)
	list, _, _, err := s.ListAgents(ctx, store.AgentFilter{ProjectID: p.ID}, store.Page{})
	must(t, err)
	byID := map[string]*store.Agent{}
	for _, a := range list {
		byID[a.ID] = a
	}
	for _, a := range want {
		equal(t, byID[a.ID], a)
	}
	if len(list) != len(want) {
		t.Fatalf("ListAgents = %d agents, want %d", len(list), len(want))
	}
}

// testPinReadOnly: UpdateAgent and UpdateAgentWith never write the pin,
// whatever the caller's copy holds (a pin changed, cleared, or set on an
// agent that had none): the stored pin is the create's.
func testPinReadOnly(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	b := newBroker(t, s, "flat")
	pin := &api.PinnedRuntimeTarget{BrokerID: b.ID, RuntimeTarget: *kubeTarget("prod", "agents")}
	a := &store.Agent{Slug: "pinned", ProjectID: p.ID, BrokerID: b.ID, Phase: api.PhaseCreated, Pin: pin}
	must(t, s.CreateAgent(ctx, a, nil))
	plain := newAgent(t, s, p.ID, "plain", b.ID)

	limit := 0
	for i, c := range []struct {
		name string
		pin  *api.PinnedRuntimeTarget
		o    *store.UpdateAgentOptions
	}{
		{"changed", &api.PinnedRuntimeTarget{BrokerID: "other", RuntimeTarget: api.RuntimeTarget{Type: api.RuntimeTargetDocker}}, nil},
		{"cleared", nil, nil},
		{"changed with a slot", &api.PinnedRuntimeTarget{BrokerID: "other"}, &store.UpdateAgentOptions{ReserveLimit: &limit}},
		{"cleared with a slot", nil, &store.UpdateAgentOptions{ReserveLimit: &limit}},
	} {
		for _, target := range []struct {
			id   string
			want *api.PinnedRuntimeTarget
		}{{a.ID, pin}, {plain.ID, nil}} {
			cur, err := s.GetAgent(ctx, target.id)
			must(t, err)
			cur.Pin = c.pin
			if target.want == nil && c.pin == nil {
				cur.Pin = pin // set one on the agent that has none
			}
			cur.StatusMessage = c.name
			if c.o == nil {
				must(t, s.UpdateAgent(ctx, cur))
			} else {
				must(t, s.UpdateAgentWith(ctx, cur, *c.o))
			}
			got, err := s.GetAgent(ctx, target.id)
			must(t, err)
			if got.StatusMessage != c.name || got.Version != cur.Version {
				t.Fatalf("%d %s: the update was not written: %+v", i, c.name, got)
			}
			equal(t, got.Pin, target.want)
		}
	}
}
