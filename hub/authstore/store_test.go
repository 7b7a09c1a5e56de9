package authstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/sqlite"
)

// counting is a store that counts the reads a decision could add.
type counting struct {
	store.Store
	reads atomic.Int64
}

func (c *counting) GetProject(ctx context.Context, id string) (*store.Project, error) {
	c.reads.Add(1)
	return c.Store.GetProject(ctx, id)
}
func (c *counting) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	c.reads.Add(1)
	return c.Store.GetAgent(ctx, id)
}
func (c *counting) GetBroker(ctx context.Context, id string) (*store.Broker, error) {
	c.reads.Add(1)
	return c.Store.GetBroker(ctx, id)
}
func (c *counting) BrokerProjects(ctx context.Context, id string) ([]string, error) {
	c.reads.Add(1)
	return c.Store.BrokerProjects(ctx, id)
}
func (c *counting) ProjectProviders(ctx context.Context, id string) ([]string, error) {
	c.reads.Add(1)
	return c.Store.ProjectProviders(ctx, id)
}

// world is a store with p1 (the member's) and p2 (someone else's), an
// agent in each, and brokers: b1 serves p1, b2 has AutoProvide, b3, b4
// and b5 serve nobody.
type world struct {
	raw    *counting
	st     *Store
	sys    context.Context
	a1, a2 *store.Agent
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w := &world{raw: &counting{Store: db}}
	w.st = New(w.raw)
	w.sys = AsSystem(ctx)
	now := time.Now().UTC()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.CreateProject(ctx, &store.Project{ID: "p1", Name: "one", CreatedBy: "um", CreatedAt: now, UpdatedAt: now}))
	must(db.CreateProject(ctx, &store.Project{ID: "p2", Name: "two", CreatedBy: "uo", CreatedAt: now, UpdatedAt: now}))
	for i := 1; i <= 5; i++ {
		must(db.CreateBroker(ctx, &store.Broker{ID: fmt.Sprintf("b%d", i), Name: fmt.Sprintf("broker-%d", i), Status: api.BrokerOffline,
			Capabilities: []string{}, AutoProvide: i == 2, CreatedBy: "uo", CreatedAt: now, UpdatedAt: now}))
	}
	must(db.LinkProvider(ctx, "p1", "b1"))
	w.a1 = &store.Agent{ID: "a-one", Slug: "one", ProjectID: "p1", BrokerID: "b3", Harness: "generic", Phase: api.PhaseRunning,
		Generation: 1, CreatedBy: "user:um", Delegator: "user:um", CreatedAt: now, UpdatedAt: now}
	w.a2 = &store.Agent{ID: "a-two", Slug: "two", ProjectID: "p2", BrokerID: "b1", Harness: "generic", Phase: api.PhaseRunning,
		Generation: 1, CreatedBy: "user:uo", Delegator: "user:uo", CreatedAt: now, UpdatedAt: now}
	must(db.CreateAgent(ctx, w.a1, nil))
	must(db.CreateAgent(ctx, w.a2, nil))
	return w
}

func as(c authz.Caller) context.Context { return WithCaller(context.Background(), c) }

// TestAContextWithoutAnActorIsRefused: default deny. Only the readiness
// probe's ping needs no caller.
func TestAContextWithoutAnActorIsRefused(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if _, err := w.st.GetProject(ctx, "p1"); !errors.Is(err, ErrNoCaller) {
		t.Fatalf("GetProject without a caller: %v, want ErrNoCaller", err)
	}
	if _, _, _, err := w.st.ListAgents(ctx, store.AgentFilter{}, store.Page{}); !errors.Is(err, ErrNoCaller) {
		t.Fatalf("ListAgents without a caller: %v", err)
	}
	if err := w.st.Release(ctx, "a-one"); !errors.Is(err, ErrNoCaller) {
		t.Fatalf("Release without a caller: %v", err)
	}
	if err := w.st.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// TestNoEscalation: AsSystem on a request's context does not make it the
// system's (every call fails); WithCaller on the system's makes it the
// caller's; a request's context never reports a system caller.
func TestNoEscalation(t *testing.T) {
	w := newWorld(t)
	req := as(agentP1)
	if _, err := w.st.GetProject(AsSystem(req), "p2"); !errors.Is(err, ErrEscalation) {
		t.Fatalf("AsSystem on a request's context: %v, want ErrEscalation", err)
	}
	if _, err := w.st.GetAgent(AsSystem(req), "a-one"); !errors.Is(err, ErrEscalation) {
		t.Fatalf("AsSystem on a request's context, its own agent: %v, want ErrEscalation", err)
	}
	narrowed := WithCaller(w.sys, agentP1)
	if _, err := w.st.GetProject(narrowed, "p2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("WithCaller on the system's context: %v, want the caller's not found", err)
	}
	if a, err := actorOf(narrowed); err != nil || a.system || a.caller.ID != agentP1.ID {
		t.Fatalf("the actor of WithCaller on the system's context: %+v, %v", a, err)
	}
	if _, err := w.st.GetProject(w.sys, "p2"); err != nil {
		t.Fatalf("the system reads p2: %v", err)
	}
}

// TestReadsWritesAndListsOfAnotherProject: for a caller confined to p1,
// p2's records do not exist (reads and writes not found), its lists hold
// p1's alone with the store's totals; a write without the right in its
// own reach is 403.
func TestReadsWritesAndListsOfAnotherProject(t *testing.T) {
	w := newWorld(t)
	tok := as(tokLife)
	if _, err := w.st.GetAgent(tok, "a-two"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAgent of p2: %v", err)
	}
	if _, err := w.st.GetAgentBySlug(tok, "p2", "two"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAgentBySlug of p2: %v", err)
	}
	if _, err := w.st.GetProject(tok, "two"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetProject of p2 by name: %v", err)
	}
	cp := *w.a2
	cp.StatusMessage = "x"
	if err := w.st.UpdateAgent(tok, &cp); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateAgent of p2: %v, want not found", err)
	}
	if err := w.st.DeleteAgent(tok, "a-two"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteAgent of p2: %v", err)
	}
	if got, _ := w.raw.Store.GetAgent(context.Background(), "a-two"); got == nil || got.StatusMessage != "" {
		t.Fatalf("p2's agent was changed: %+v", got)
	}
	items, next, total, err := w.st.ListAgents(tok, store.AgentFilter{}, store.Page{})
	if err != nil || len(items) != 1 || items[0].ID != "a-one" || total != 1 || next != "" {
		t.Fatalf("ListAgents: %d items, total %d, next %q, %v", len(items), total, next, err)
	}
	if items, _, total, _ := w.st.ListAgents(tok, store.AgentFilter{ProjectID: "p2"}, store.Page{}); len(items) != 0 || total != 0 {
		t.Fatalf("ListAgents of p2: %d items, total %d", len(items), total)
	}
	ps, _, total, err := w.st.ListProjects(tok, store.Page{})
	if err != nil || len(ps) != 1 || ps[0].ID != "p1" || total != 1 {
		t.Fatalf("ListProjects: %v, total %d, %v", ps, total, err)
	}
	// A viewer reads p1's agent, but a write of it is 403.
	cp = *w.a1
	err = w.st.UpdateAgent(as(viewer), &cp)
	if !api.IsCode(err, api.CodeForbidden) {
		t.Fatalf("a viewer's write: %v, want forbidden", err)
	}
	// Its agent's broker (b3, serving nobody) is readable to whom the
	// agent is: named by a record its request read (a new request here:
	// what one request read is not another's).
	tok = as(tokLife)
	if _, err := w.st.GetBroker(tok, "b3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("b3 before reading its agent: %v, want not found", err)
	}
	if _, err := w.st.GetAgent(tok, "a-one"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.GetBroker(tok, "b3"); err != nil {
		t.Fatalf("b3 after reading its agent: %v", err)
	}
}

// TestBrokerListPagesWhatTheCallerSees: a caller without broker.read
// lists the brokers Visible to it, paged with the store's cursors and a
// total of its own.
func TestBrokerListPagesWhatTheCallerSees(t *testing.T) {
	w := newWorld(t)
	tok := as(tokRead)
	var ids []string
	page := store.Page{Limit: 1}
	for {
		bs, next, total, err := w.st.ListBrokers(tok, page)
		if err != nil {
			t.Fatal(err)
		}
		if total != 2 {
			t.Fatalf("total %d, want 2 (b1 serves p1, b2 has AutoProvide)", total)
		}
		for _, b := range bs {
			ids = append(ids, b.ID)
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	if fmt.Sprint(ids) != "[b1 b2]" {
		t.Fatalf("listed %v, want [b1 b2]", ids)
	}
	if _, _, _, err := w.st.ListBrokers(tok, store.Page{Cursor: "not a cursor!"}); !errors.Is(err, store.ErrBadCursor) {
		t.Fatalf("a bad cursor: %v", err)
	}
	if _, _, total, _ := w.st.ListBrokers(as(viewer), store.Page{}); total != 5 {
		t.Fatalf("a viewer lists %d brokers, want 5", total)
	}
	projects, err := w.st.BrokerProjects(tok, "b1")
	if err != nil || fmt.Sprint(projects) != "[p1]" {
		t.Fatalf("BrokerProjects: %v, %v", projects, err)
	}
}

// TestInternalSettingsAndBrokerSecrets: the agent-token key is the
// system's even for an admin; a broker secret's value is its broker's,
// an admin reads the record without it.
func TestInternalSettingsAndBrokerSecrets(t *testing.T) {
	w := newWorld(t)
	if err := w.st.PutSetting(w.sys, "agent_token_key", []byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.GetSetting(as(admin), "agent_token_key"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an admin reads the signing key: %v", err)
	}
	if err := w.st.PutSetting(as(admin), "agent_token_key", []byte("mine")); !api.IsCode(err, api.CodeForbidden) {
		t.Fatalf("an admin writes the signing key: %v", err)
	}
	if err := w.st.PutSetting(as(admin), SettingLimits, []byte(`{}`)); err != nil {
		t.Fatalf("an admin writes the limits: %v", err)
	}
	if err := w.st.PutBrokerSecret(as(admin), &store.BrokerSecret{BrokerID: "b1", Name: "KUBE", Ciphertext: []byte("sealed")}); err != nil {
		t.Fatal(err)
	}
	x, err := w.st.GetBrokerSecret(as(admin), "b1", "KUBE")
	if err != nil || x.Ciphertext != nil {
		t.Fatalf("an admin's read: %+v, %v; want the record without its value", x, err)
	}
	x, err = w.st.GetBrokerSecret(as(brokerB1), "b1", "KUBE")
	if err != nil || string(x.Ciphertext) != "sealed" {
		t.Fatalf("the broker's read: %+v, %v", x, err)
	}
	if _, err := w.st.GetBrokerSecret(as(member), "b1", "KUBE"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a member's read: %v", err)
	}
}

// TestTheCreatePathCostsNoExtraRead: the reads and writes of an agent's
// create (the project, the named broker, the commit, the phase after the
// broker's answer, the slot) cost the store nothing beyond themselves:
// each decision uses the records the call fetched, the project's owner
// is cached, and the agent written is the one the request created.
func TestTheCreatePathCostsNoExtraRead(t *testing.T) {
	w := newWorld(t)
	for _, c := range []authz.Caller{member, tokCreate} {
		ctx := as(c)
		before := w.raw.reads.Load()
		p, err := w.st.GetProject(ctx, "one")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.st.GetBrokerForProject(ctx, "b2", p.ID); err != nil {
			t.Fatal(err)
		}
		a := &store.Agent{ID: "new-" + c.ID, Slug: "new-" + c.ID, ProjectID: p.ID, BrokerID: "b2", Harness: "generic",
			Phase: api.PhaseProvisioning, Generation: 1, CreatedBy: c.Principal(), Delegator: c.Principal(), CreatedAt: time.Now().UTC()}
		if _, err := w.st.CreateAgentWith(ctx, a, store.CreateAgentOptions{ReserveLimit: new(int)}); err != nil {
			t.Fatal(err)
		}
		a.Phase = api.PhaseStopped
		if err := w.st.UpdateAgent(ctx, a); err != nil {
			t.Fatalf("%s writes the phase of its own create: %v", c.ID, err)
		}
		if err := w.st.Release(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if got := w.raw.reads.Load() - before; got != 1 {
			t.Errorf("%s: the create path read the store %d times, want 1 (its own GetProject)", c.ID, got)
		}
	}
}
