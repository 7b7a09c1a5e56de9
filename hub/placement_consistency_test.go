package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/store"
)

var (
	pcDocker = api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	pcKube   = api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "agents"}
)

// pinStore fails the DeleteAgent of an agent in failDelete once, as a
// Hub killed there would leave it.
type pinStore struct {
	store.Store
	mu         sync.Mutex
	failDelete map[string]bool
	// onDelete runs before each DeleteAgent.
	onDelete func(id string)
}

func (s *pinStore) DeleteAgent(ctx context.Context, id string) error {
	s.mu.Lock()
	fail := s.failDelete[id]
	delete(s.failDelete, id)
	s.mu.Unlock()
	if fail {
		return errors.New("the Hub stopped here")
	}
	if s.onDelete != nil {
		s.onDelete(id)
	}
	return s.Store.DeleteAgent(ctx, id)
}

// placementEnv is a Hub with two flat brokers b1 and b2 serving Docker
// (the fake runtime), providing for project "default", and agent w
// running on b1, pinned to it.
type placementEnv struct {
	*testenv.Env
	ps     *pinStore
	b1, b2 *testenv.Broker
	w      *store.Agent
	logs   *syncBuffer
}

func newPlacementEnv(t *testing.T, pg bool) *placementEnv {
	t.Helper()
	ctx := context.Background()
	pe := &placementEnv{ps: &pinStore{failDelete: map[string]bool{}}, logs: &syncBuffer{}}
	pe.Env = testenv.New(t, testenv.Options{
		Postgres:  pg,
		WrapStore: func(s store.Store) store.Store { pe.ps.Store = s; return pe.ps },
		LogTo:     pe.logs,
	})
	set, err := pe.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
	if _, err := pe.Admin.PutSettings(ctx, *set); err != nil {
		t.Fatal(err)
	}
	pe.b1 = pe.AddFlatBroker("b1", pcDocker, nil)
	pe.b2 = pe.AddFlatBroker("b2", pcDocker, nil)
	pe.w = pe.run(t, "w", "b1")
	return pe
}

// run creates agent name on broker and returns its record once running.
func (pe *placementEnv) run(t *testing.T, name, broker string) *store.Agent {
	t.Helper()
	ctx := context.Background()
	a, err := pe.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Broker: broker, Start: true, Command: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := pe.agent(t, a.ID)
	if rec.Pin == nil || rec.Phase != api.PhaseRunning {
		t.Fatalf("agent %s: phase %s pin %v, want running and pinned", name, rec.Phase, rec.Pin)
	}
	return rec
}

func (pe *placementEnv) agent(t *testing.T, id string) *store.Agent {
	t.Helper()
	a, err := pe.Store.GetAgent(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// runtimeCalls counts the calls that act on or read from an agent's
// container, on both brokers' runtimes (the Hub's own inventories and
// inspections excluded).
func (pe *placementEnv) runtimeCalls() map[string]int {
	n := map[string]int{}
	for _, b := range []*testenv.Broker{pe.b1, pe.b2} {
		for _, m := range []string{"Create", "Start", "Stop", "Suspend", "Resume", "Delete", "Logs", "Exec", "Attach"} {
			n[m] += b.Runtime.Calls(m)
		}
	}
	return n
}

// setTarget writes broker b's runtime target in its record (nil: it
// serves no single target).
func (pe *placementEnv) setTarget(t *testing.T, b *testenv.Broker, target *api.RuntimeTarget) {
	t.Helper()
	ctx := context.Background()
	rec, err := pe.Store.GetBroker(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec.RuntimeTarget = target
	if err := pe.Store.UpdateBroker(ctx, rec); err != nil {
		t.Fatal(err)
	}
}

// forgePin writes agent a's record again with pin: the pin is written
// only at a create, so the record is removed and created again, with its
// ID, container and slot.
func (pe *placementEnv) forgePin(t *testing.T, a *store.Agent, pin api.PinnedRuntimeTarget) {
	t.Helper()
	ctx := context.Background()
	if err := pe.ps.Store.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	a.Pin = &pin
	unlimited := 0
	if err := pe.ps.Store.CreateAgent(ctx, a, &unlimited); err != nil {
		t.Fatal(err)
	}
}

func wantAPICode(t *testing.T, what string, err error, code string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != code {
		t.Errorf("%s: %v, want 409 %s", what, err, code)
	}
}

// everyOperationRefused: each operation that reaches a broker for agent
// a answers 409 code and reaches no runtime; get and list still work; the
// record and its slot on slotBroker (when set) stay.
func (pe *placementEnv) everyOperationRefused(t *testing.T, a *store.Agent, code string, slotBroker string) {
	t.Helper()
	ctx := context.Background()
	before := pe.runtimeCalls()
	for _, v := range []string{client.ActionStart, client.ActionStop, client.ActionRestart, client.ActionSuspend, client.ActionResume} {
		_, err := pe.Admin.AgentAction(ctx, a.Slug, "default", v)
		wantAPICode(t, v, err, code)
	}
	wantAPICode(t, "delete", pe.Admin.DeleteAgent(ctx, a.Slug, "default"), code)
	wantAPICode(t, "delete --force", pe.Admin.ForceDeleteAgent(ctx, a.Slug, "default"), code)
	rc, err := pe.Admin.Logs(ctx, a.Slug, "default", false, 0)
	if err == nil {
		rc.Close()
	}
	wantAPICode(t, "logs", err, code)
	_, err = pe.Admin.Exec(ctx, a.Slug, "default", api.ExecRequest{Command: []string{"echo", "hi"}}, io.Discard, io.Discard)
	wantAPICode(t, "exec", err, code)
	att, err := pe.Admin.Attach(ctx, a.Slug, "default")
	if err == nil {
		att.Close()
	}
	wantAPICode(t, "attach", err, code)
	if after := pe.runtimeCalls(); !mapsEqual(before, after) {
		t.Errorf("runtime calls %v -> %v: a refused operation reached a runtime", before, after)
	}
	// Reads are not checked.
	if _, err := pe.Admin.GetAgent(ctx, a.Slug, "default"); err != nil {
		t.Errorf("get: %v", err)
	}
	l, err := pe.Admin.ListAgents(ctx, client.AgentFilter{Project: "default"}, "", 0)
	if err != nil || !slices.ContainsFunc(l.Items, func(x api.Agent) bool { return x.ID == a.ID }) {
		t.Errorf("list: %v, want the agent listed", err)
	}
	// The record and its accounting stay.
	pe.agent(t, a.ID)
	if slotBroker != "" {
		held, err := pe.Store.ReservedAgents(ctx, slotBroker)
		if err != nil || !slices.Contains(held, a.ID) {
			t.Errorf("slots on %s: %v %v, want the agent's", slotBroker, held, err)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestPlacementConsistencyConsistent: an agent pinned to the flat broker
// it runs on is reached as usual (the control for the refusals below).
func TestPlacementConsistencyConsistent(t *testing.T) {
	pe := newPlacementEnv(t, false)
	ctx := context.Background()
	if _, err := pe.Admin.AgentAction(ctx, "w", "default", client.ActionStop); err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Admin.AgentAction(ctx, "w", "default", client.ActionStart); err != nil {
		t.Fatal(err)
	}
	if code, err := pe.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"echo", "hi"}}, io.Discard, io.Discard); err != nil || code != 0 {
		t.Fatalf("exec: %d %v", code, err)
	}
	if err := pe.Admin.DeleteAgent(ctx, "w", "default"); err != nil {
		t.Fatal(err)
	}
	if n := pe.b1.Runtime.Calls("Delete"); n != 1 {
		t.Fatalf("runtime deletes %d, want 1", n)
	}
}

// TestPlacementConsistencyForgedRecords: each forged record change makes
// every operation on the pinned agent answer the spec's 409, with nothing
// sent to any broker, while get and list still work.
func TestPlacementConsistencyForgedRecords(t *testing.T) {
	ctx := context.Background()
	kube := pcKube
	for _, tc := range []struct {
		name  string
		forge func(t *testing.T, pe *placementEnv)
		code  string
		slot  bool // its slot on b1 is checked
	}{
		{"assignment edited", func(t *testing.T, pe *placementEnv) {
			pe.w.BrokerID = pe.b2.ID
			if err := pe.Store.UpdateAgent(ctx, pe.w); err != nil {
				t.Fatal(err)
			}
		}, api.CodeTargetPinStale, true},
		{"pin names another broker", func(t *testing.T, pe *placementEnv) {
			pe.forgePin(t, pe.w, api.PinnedRuntimeTarget{BrokerID: pe.b2.ID, RuntimeTarget: pcDocker})
		}, api.CodeTargetPinStale, true},
		{"pin incomplete", func(t *testing.T, pe *placementEnv) {
			pe.forgePin(t, pe.w, api.PinnedRuntimeTarget{BrokerID: pe.b1.ID, RuntimeTarget: api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch"}})
		}, api.CodeTargetPinStale, true},
		{"pin names another target", func(t *testing.T, pe *placementEnv) {
			pe.forgePin(t, pe.w, api.PinnedRuntimeTarget{BrokerID: pe.b1.ID, RuntimeTarget: pcKube})
		}, api.CodeTargetMismatch, true},
		{"broker's target changed in its record", func(t *testing.T, pe *placementEnv) { pe.setTarget(t, pe.b1, &kube) }, api.CodeTargetMismatch, true},
		{"broker no longer serves a single target", func(t *testing.T, pe *placementEnv) { pe.setTarget(t, pe.b1, nil) }, api.CodeTargetMismatch, true},
		{"pinned broker deregistered with force", func(t *testing.T, pe *placementEnv) {
			pe.StopBroker(pe.b1)
			if err := pe.Admin.ForceDeregisterBroker(ctx, pe.b1.ID); err != nil {
				t.Fatal(err)
			}
		}, api.CodeBrokerMissing, false},
		{"pinned broker deregistered, agent assigned to another", func(t *testing.T, pe *placementEnv) {
			pe.w.BrokerID = pe.b2.ID
			if err := pe.Store.UpdateAgent(ctx, pe.w); err != nil {
				t.Fatal(err)
			}
			pe.StopBroker(pe.b1)
			if err := pe.Admin.ForceDeregisterBroker(ctx, pe.b1.ID); err != nil {
				t.Fatal(err)
			}
		}, api.CodeBrokerMissing, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engines(t, func(t *testing.T, pg bool) {
				pe := newPlacementEnv(t, pg)
				pe.w = pe.agent(t, pe.w.ID)
				tc.forge(t, pe)
				slot := ""
				if tc.slot {
					slot = pe.b1.ID
				}
				pe.everyOperationRefused(t, pe.agent(t, pe.w.ID), tc.code, slot)
			})
		})
	}
}

// TestPlacementConsistencyHelloWithAnotherTarget: a flat broker that
// comes back serving another runtime target, or as a regular broker
// serving none, reaches none of its pinned agents (409
// runtime_target_mismatch), and its reconnect's inventory leaves the
// agent and its slot alone.
func TestPlacementConsistencyHelloWithAnotherTarget(t *testing.T) {
	kube := pcKube
	for _, target := range []*api.RuntimeTarget{&kube, nil} {
		t.Run(fmt.Sprint(target), func(t *testing.T) {
			pe := newPlacementEnv(t, false)
			ctx := context.Background()
			pe.StopBroker(pe.b1)
			pe.WaitBrokerStatus(pe.b1.ID, api.BrokerOffline)
			// The runtime it now serves has no container of the agent's:
			// its inventory cannot speak for the pinned target's.
			if err := pe.b1.Runtime.Delete(ctx, pe.w.ID); err != nil {
				t.Fatal(err)
			}
			pe.b1.RuntimeTarget = target
			pe.StartBroker(pe.b1, pe.b1.Runtime.Restart())
			rec, err := pe.Store.GetBroker(ctx, pe.b1.ID)
			if err != nil || (rec.RuntimeTarget == nil) != (target == nil) || (target != nil && *rec.RuntimeTarget != *target) {
				t.Fatalf("broker record %v %v: want the hello's target", rec, err)
			}
			pe.everyOperationRefused(t, pe.agent(t, pe.w.ID), api.CodeTargetMismatch, pe.b1.ID)
			if a := pe.agent(t, pe.w.ID); a.Phase != api.PhaseRunning {
				t.Errorf("phase %s, want running: the inventory of another target says nothing of the agent's", a.Phase)
			}
		})
	}
}

// TestPlacementConsistencyQueuedStop: a stop queued while the broker was
// offline and refused at its reconnect (the agent's assignment was
// edited meanwhile) is skipped with the refusal as its result; the agent
// stays stopped with container status stop_queued and keeps its slot,
// until an inventory of its pinned broker shows the container gone.
func TestPlacementConsistencyQueuedStop(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		pe := newPlacementEnv(t, pg)
		ctx := context.Background()
		pe.StopBroker(pe.b1)
		pe.WaitBrokerStatus(pe.b1.ID, api.BrokerOffline)
		got, err := pe.Admin.AgentAction(ctx, "w", "default", client.ActionStop)
		if err != nil || got.QueuedDispatch == nil {
			t.Fatalf("stop: %v %+v, want it queued", err, got)
		}
		a := pe.agent(t, pe.w.ID)
		a.BrokerID = pe.b2.ID
		if err := pe.Store.UpdateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
		stops := pe.b1.Runtime.Calls("Stop") + pe.b2.Runtime.Calls("Stop")
		pe.StartBroker(pe.b1, pe.b1.Runtime.Restart())
		var d *store.Dispatch
		wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
			if d, err = pe.Store.GetDispatch(ctx, got.QueuedDispatch.ID); err != nil {
				return err
			}
			if d.Status == store.DispatchPending {
				return fmt.Errorf("dispatch still pending")
			}
			return nil
		})
		if d.Status != store.DispatchSkipped || !strings.HasPrefix(d.Result, api.CodeTargetPinStale+": ") {
			t.Errorf("dispatch %s %q, want skipped with the refusal", d.Status, d.Result)
		}
		if n := pe.b1.Runtime.Calls("Stop") + pe.b2.Runtime.Calls("Stop"); n != stops {
			t.Errorf("runtime stops %d -> %d: the refused stop was sent", stops, n)
		}
		a = pe.agent(t, pe.w.ID)
		if a.Phase != api.PhaseStopped || a.ContainerStatus != api.ContainerStopQueued || !strings.Contains(a.StatusMessage, "queued stop not delivered") {
			t.Errorf("agent %s/%s %q, want stopped, stop_queued, saying why", a.Phase, a.ContainerStatus, a.StatusMessage)
		}
		held, err := pe.Store.ReservedAgents(ctx, pe.b1.ID)
		if err != nil || !slices.Contains(held, a.ID) {
			t.Fatalf("slots on b1 %v %v: the agent keeps its slot", held, err)
		}
		if !strings.Contains(pe.logs.String(), "queued dispatch not delivered") {
			t.Error("the refusal is not logged")
		}

		// The container goes; b1's next inventory shows it gone: the slot is
		// freed, the record stays.
		pe.StopBroker(pe.b1)
		pe.WaitBrokerStatus(pe.b1.ID, api.BrokerOffline)
		if err := pe.b1.Runtime.Delete(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		pe.StartBroker(pe.b1, pe.b1.Runtime.Restart())
		wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
			held, err := pe.Store.ReservedAgents(ctx, pe.b1.ID)
			if err != nil || slices.Contains(held, a.ID) {
				return fmt.Errorf("slots on b1 %v %v", held, err)
			}
			return nil
		})
		pe.agent(t, a.ID)
	})
}

// TestPlacementConsistencyProjectDelete: a project delete without force
// is refused while a misplaced agent remains, naming the force option;
// with force the records go, the consistent agent's workload is deleted
// on its broker, nothing is sent for the misplaced one, and the Hub logs
// an error naming it and its pinned broker.
func TestPlacementConsistencyProjectDelete(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		pe := newPlacementEnv(t, pg)
		ctx := context.Background()
		if _, err := pe.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
			t.Fatal(err)
		}
		for _, b := range []*testenv.Broker{pe.b1, pe.b2} {
			if _, err := pe.Admin.ProvideProject(ctx, b.ID, "web"); err != nil {
				t.Fatal(err)
			}
		}
		mk := func(name string) *store.Agent {
			a, err := pe.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "web", Broker: "b1", Start: true, Command: []string{"sleep"}})
			if err != nil {
				t.Fatal(err)
			}
			return pe.agent(t, a.ID)
		}
		lost, kept := mk("lost"), mk("kept")
		lost.BrokerID = pe.b2.ID // forged: its pin names b1
		if err := pe.Store.UpdateAgent(ctx, lost); err != nil {
			t.Fatal(err)
		}

		_, err := pe.Admin.DeleteProject(ctx, "web")
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, "--force") {
			t.Fatalf("delete without force: %v, want 409 naming --force", err)
		}
		pe.agent(t, lost.ID)
		pe.agent(t, kept.ID)

		deletes := pe.b1.Runtime.Calls("Delete") + pe.b2.Runtime.Calls("Delete")
		res, err := pe.Admin.ForceDeleteProject(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if n := pe.b1.Runtime.Calls("Delete") + pe.b2.Runtime.Calls("Delete"); n != deletes+1 {
			t.Errorf("runtime deletes %d -> %d, want one: the consistent agent's", deletes, n)
		}
		if _, err := pe.b1.Runtime.Inspect(ctx, lost.ID); err != nil {
			t.Errorf("the misplaced agent's workload is left running: %v", err)
		}
		for _, id := range []string{lost.ID, kept.ID} {
			if _, err := pe.Store.GetAgent(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("agent %s: %v, want its record gone", id, err)
			}
		}
		if _, err := pe.Admin.GetProject(ctx, "web"); err == nil {
			t.Error("the project is still there")
		}
		if !slices.ContainsFunc(res.Left, func(r api.ProjectResource) bool {
			return r.Resource == "agent lost" && r.BrokerID == pe.b1.ID && strings.Contains(r.Reason, "by hand")
		}) {
			t.Errorf("left %+v: want the misplaced agent's workload on b1", res.Left)
		}
		var line string
		for _, l := range strings.Split(pe.logs.String(), "\n") {
			if strings.Contains(l, "level=ERROR") && strings.Contains(l, "agent=lost") {
				line = l
			}
		}
		if !strings.Contains(line, "pinned_broker_id="+pe.b1.ID) {
			t.Errorf("log %q: want an error naming the agent and its pinned broker", line)
		}
	})
}

// TestPlacementConsistencyProjectDeleteResumes: a forced project delete
// stopped midway (one record's removal failing as a Hub killed there
// would) leaves the records not yet removed; the same request again
// finishes.
func TestPlacementConsistencyProjectDeleteResumes(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		pe := newPlacementEnv(t, pg)
		ctx := context.Background()
		if _, err := pe.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
			t.Fatal(err)
		}
		if _, err := pe.Admin.ProvideProject(ctx, pe.b1.ID, "web"); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, name := range []string{"x", "y", "z"} {
			a, err := pe.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "web", Broker: "b1", Start: true, Command: []string{"sleep"}})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, a.ID)
		}
		pe.ps.mu.Lock()
		pe.ps.failDelete[ids[1]] = true
		pe.ps.mu.Unlock()
		if _, err := pe.Admin.ForceDeleteProject(ctx, "web"); err == nil {
			t.Fatal("the interrupted delete succeeded")
		}
		if _, err := pe.Store.GetAgent(ctx, ids[1]); err != nil {
			t.Fatalf("the record not removed: %v", err)
		}
		if _, err := pe.Admin.GetProject(ctx, "web"); err != nil {
			t.Fatalf("the project went with an agent left: %v", err)
		}
		if _, err := pe.Admin.ForceDeleteProject(ctx, "web"); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := pe.Store.GetAgent(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("agent %s: %v", id, err)
			}
		}
		if _, err := pe.b1.Runtime.Inspect(ctx, ids[1]); err == nil {
			t.Error("the workload of the agent the first attempt left is not deleted")
		}
	})
}

// TestPlacementConsistencyKeyedCreateRetry: the keyed retry of a create
// the broker refused asks the broker again for an existing agent; with
// its placement inconsistent by then it is refused (409
// runtime_target_mismatch) and no create is sent.
func TestPlacementConsistencyKeyedCreateRetry(t *testing.T) {
	pe := newPlacementEnv(t, false)
	pe.b1.Runtime.FailNext("Create", errors.New("disk full"))
	req := api.CreateAgentRequest{Name: "k", Project: "default", Broker: "b1", Start: true, Command: []string{"sleep"}}
	key := client.NewIdempotencyKey()
	if st, body := post(t, pe.Env, "/agents", key, req); st != http.StatusBadGateway {
		t.Fatalf("first create: %d %s, want 502", st, body)
	}
	kube := pcKube
	pe.setTarget(t, pe.b1, &kube)
	creates := pe.b1.Runtime.Calls("Create")
	st, body := post(t, pe.Env, "/agents", key, req)
	var eb api.ErrorBody
	if st != http.StatusConflict || json.Unmarshal(body, &eb) != nil || eb.Error.Code != api.CodeTargetMismatch {
		t.Fatalf("keyed retry: %d %s, want 409 %s", st, body, api.CodeTargetMismatch)
	}
	if n := pe.b1.Runtime.Calls("Create"); n != creates {
		t.Errorf("runtime creates %d -> %d: the refused retry was sent", creates, n)
	}
}

// TestPlacementConsistencySettleMisplaced: a command cut off by its
// broker going offline is settled after the reconnect by asking the
// broker (SettleAgent). When the broker came back serving another
// target, that ask reaches a broker the agent's placement says it is
// not on: nothing is sent, and the agent and its slot stay, as the
// reconnect's own inventory leaves them.
func TestPlacementConsistencySettleMisplaced(t *testing.T) {
	pe := newPlacementEnv(t, false)
	ctx := context.Background()
	pe.StopBroker(pe.b1)
	pe.WaitBrokerStatus(pe.b1.ID, api.BrokerOffline)
	if err := pe.b1.Runtime.Delete(ctx, pe.w.ID); err != nil {
		t.Fatal(err)
	}
	kube := pcKube
	pe.b1.RuntimeTarget = &kube
	pe.StartBroker(pe.b1, pe.b1.Runtime.Restart())
	pe.WaitBrokerStatus(pe.b1.ID, api.BrokerOnline)
	inspects := pe.b1.Runtime.Calls("Inspect")
	err := pe.Hub.SettleAgent(ctx, pe.w.ID, pe.b1.ID)
	wantAPICode(t, "settle", err, api.CodeTargetMismatch)
	if n := pe.b1.Runtime.Calls("Inspect"); n != inspects {
		t.Errorf("runtime inspects %d -> %d: the settle reached a broker serving another target", inspects, n)
	}
	if a := pe.agent(t, pe.w.ID); a.Phase != api.PhaseRunning {
		t.Errorf("phase %s (%s), want running: a broker serving another target says nothing of the agent", a.Phase, a.StatusMessage)
	}
	held, err := pe.Store.ReservedAgents(ctx, pe.b1.ID)
	if err != nil || !slices.Contains(held, pe.w.ID) {
		t.Errorf("slots on b1: %v %v, want the agent's", held, err)
	}
}

// TestPlacementConsistencyReconnectSlotElsewhere: an agent running on
// its broker whose capacity slot the records put on another broker (an
// edited database) is not re-adopted by its broker's reconnect: the
// reservation is never moved, and the reconnect is not refused for it,
// so the broker's other agents stay reachable.
func TestPlacementConsistencyReconnectSlotElsewhere(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		pe := newPlacementEnv(t, pg)
		ctx := context.Background()
		x := pe.run(t, "x", "b2")
		other := pe.run(t, "other", "b2")
		if err := pe.Store.Release(ctx, x.ID); err != nil {
			t.Fatal(err)
		}
		if err := pe.Store.Reserve(ctx, pe.b1.ID, x.ID, 0); err != nil {
			t.Fatal(err)
		}
		pe.StopBroker(pe.b2)
		pe.WaitBrokerStatus(pe.b2.ID, api.BrokerOffline)
		pe.StartBroker(pe.b2, pe.b2.Runtime.Restart())
		if _, err := pe.Admin.AgentAction(ctx, other.Slug, "default", client.ActionStop); err != nil {
			t.Fatalf("stop %s on the reconnected broker: %v", other.Slug, err)
		}
		held, err := pe.Store.ReservedAgents(ctx, pe.b1.ID)
		if err != nil || !slices.Contains(held, x.ID) {
			t.Errorf("slots on b1: %v %v, want x's, never moved", held, err)
		}
		held, err = pe.Store.ReservedAgents(ctx, pe.b2.ID)
		if err != nil || slices.Contains(held, x.ID) {
			t.Errorf("slots on b2: %v %v, want none of x's", held, err)
		}
	})
}

// TestPlacementConsistencyResendToReplacedSession: a keyed command whose
// answer is lost because the broker's session was replaced is sent again
// on the new session. When the new session serves another target (here
// a second process under the broker's credentials), that resend reaches
// a broker the agent's placement no longer names: it is refused as any
// reach is (409 runtime_target_mismatch), and nothing is sent to it.
func TestPlacementConsistencyResendToReplacedSession(t *testing.T) {
	// b1 does not reconnect before the test ends: the second process's
	// session stays current.
	e := testenv.New(t, testenv.Options{MinBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second})
	ctx := context.Background()
	set, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
	if _, err := e.Admin.PutSettings(ctx, *set); err != nil {
		t.Fatal(err)
	}
	b1 := e.AddFlatBroker("b1", pcDocker, nil)
	w, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Broker: "b1", Start: true, Command: []string{"sleep"}})
	if err != nil || w.Phase != api.PhaseRunning {
		t.Fatalf("create: %+v %v", w, err)
	}
	b1.Runtime.SetLatency("Stop", 2*time.Second)
	stopped := make(chan error, 1)
	go func() {
		_, err := e.Admin.AgentAction(ctx, "w", "default", client.ActionStop)
		stopped <- err
	}()
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		if b1.Runtime.Calls("Stop") == 0 {
			return errors.New("stop not on b1's runtime yet")
		}
		return nil
	})
	imposter := e.NewBroker(b1.ID, "imposter", b1.Secret)
	kube := pcKube
	imposter.RuntimeTarget = &kube
	e.LaunchBroker(imposter, b1.Runtime.Restart())
	err = <-stopped
	wantAPICode(t, "stop", err, api.CodeTargetMismatch)
	// The Hub's refusal, not the broker's own check of the pin it was
	// sent: the second process got nothing.
	if err == nil || !strings.Contains(err.Error(), "Nothing was sent to any runtime broker") {
		t.Errorf("stop: %v, want the Hub's refusal (nothing sent)", err)
	}
	if a, err := e.Store.GetAgent(ctx, w.ID); err != nil || a.Phase != api.PhaseRunning {
		t.Errorf("agent: %+v %v, want it left running", a, err)
	}
}

// gateStore calls onUpdate before each UpdateAgent.
type gateStore struct {
	store.Store
	onUpdate func(a *store.Agent)
}

func (s *gateStore) UpdateAgent(ctx context.Context, a *store.Agent) error {
	if f := s.onUpdate; f != nil {
		f(a)
	}
	return s.Store.UpdateAgent(ctx, a)
}

// TestPlacementConsistencyStopResentAfterReconnect: a stop cut off by
// its broker going offline is queued, or, when the broker is back
// already, sent again on its new session. When that session serves
// another target, the stop is refused as any reach is (409
// runtime_target_mismatch, the Hub's refusal: nothing sent).
func TestPlacementConsistencyStopResentAfterReconnect(t *testing.T) {
	gs := &gateStore{}
	var once sync.Once
	e := testenv.New(t, testenv.Options{MinBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second,
		WrapStore: func(s store.Store) store.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	set, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
	if _, err := e.Admin.PutSettings(ctx, *set); err != nil {
		t.Fatal(err)
	}
	b1 := e.AddFlatBroker("b1", pcDocker, nil)
	w, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Broker: "b1", Start: true, Command: []string{"sleep"}})
	if err != nil || w.Phase != api.PhaseRunning {
		t.Fatalf("create: %+v %v", w, err)
	}
	kube := pcKube
	imposter := e.NewBroker(b1.ID, "imposter", b1.Secret)
	imposter.RuntimeTarget = &kube
	rt := b1.Runtime
	// The failed stop puts the agent back to running (stopping ->
	// running): by then the broker is back, serving another target.
	gs.onUpdate = func(a *store.Agent) {
		if a.ID == w.ID && a.Phase == api.PhaseRunning {
			once.Do(func() {
				e.StartBroker(imposter, rt.Restart())
			})
		}
	}
	rt.SetLatency("Stop", 2*time.Second)
	stopped := make(chan error, 1)
	go func() {
		_, err := e.Admin.AgentAction(ctx, "w", "default", client.ActionStop)
		stopped <- err
	}()
	wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
		if rt.Calls("Stop") == 0 {
			return errors.New("stop not on b1's runtime yet")
		}
		return nil
	})
	e.StopBroker(b1)
	err = <-stopped
	wantAPICode(t, "stop", err, api.CodeTargetMismatch)
	if err == nil || !strings.Contains(err.Error(), "Nothing was sent to any runtime broker") {
		t.Errorf("stop: %v, want the Hub's refusal (nothing sent)", err)
	}
}

// TestPlacementConsistencyStartSlotElsewhere: a start of a pinned agent
// that still holds a reservation on another instance is refused with 409
// broker_reservation_scope_conflict naming the agent; the reservation
// stays where it is and the agent stays stopped.
func TestPlacementConsistencyStartSlotElsewhere(t *testing.T) {
	pe := newPlacementEnv(t, false)
	ctx := context.Background()
	if _, err := pe.Admin.AgentAction(ctx, "w", "default", client.ActionStop); err != nil {
		t.Fatal(err)
	}
	if err := pe.Store.Reserve(ctx, pe.b2.ID, pe.w.ID, 0); err != nil {
		t.Fatal(err)
	}
	before := pe.runtimeCalls()
	for _, v := range []string{client.ActionStart, client.ActionRestart} {
		_, err := pe.Admin.AgentAction(ctx, "w", "default", v)
		wantAPICode(t, v, err, api.CodeReservationScopeConflict)
		if err == nil || !strings.Contains(err.Error(), `"w"`) {
			t.Errorf("%s: %v, want the message to name agent \"w\"", v, err)
		}
	}
	if after := pe.runtimeCalls(); !mapsEqual(before, after) {
		t.Errorf("runtime calls %v -> %v", before, after)
	}
	held, err := pe.Store.ReservedAgents(ctx, pe.b2.ID)
	if err != nil || !slices.Contains(held, pe.w.ID) {
		t.Errorf("slots on b2: %v %v, want w's, never moved", held, err)
	}
	if a := pe.agent(t, pe.w.ID); a.Phase != api.PhaseStopped {
		t.Errorf("phase %s, want stopped", a.Phase)
	}
}

// TestPlacementConsistencyProjectDeleteRaced: a forced project delete
// that removed agent records and then met an agent created in the
// project meanwhile is refused (try again), and its refusal still lists
// the workloads the removed agents may have left: the next attempt no
// longer knows of them.
func TestPlacementConsistencyProjectDeleteRaced(t *testing.T) {
	pe := newPlacementEnv(t, false)
	ctx := context.Background()
	if _, err := pe.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Admin.ProvideProject(ctx, pe.b1.ID, "web"); err != nil {
		t.Fatal(err)
	}
	a, err := pe.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "lost", Project: "web", Broker: "b1", Start: true, Command: []string{"sleep"}})
	if err != nil {
		t.Fatal(err)
	}
	lost := pe.agent(t, a.ID)
	lost.BrokerID = pe.b2.ID // forged: its pin names b1
	if err := pe.Store.UpdateAgent(ctx, lost); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	pe.ps.onDelete = func(id string) {
		if id == lost.ID {
			once.Do(func() {
				if _, err := pe.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "late", Project: "web", Broker: "b1", Command: []string{"sleep"}}); err != nil {
					t.Errorf("create late: %v", err)
				}
			})
		}
	}
	_, err = pe.Admin.ForceDeleteProject(ctx, "web")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Fatalf("forced delete raced by a create: %v, want 409", err)
	}
	if !strings.Contains(ae.Message, "agent lost") || !strings.Contains(ae.Message, pe.b1.ID) {
		t.Errorf("refusal %q: want it to name the workload agent lost may have left on b1", ae.Message)
	}
	res, err := pe.Admin.ForceDeleteProject(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(res.Left, func(r api.ProjectResource) bool { return r.Resource == "agent lost" }) {
		t.Errorf("left %+v: the second attempt knows of agent lost", res.Left)
	}
}
