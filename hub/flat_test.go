package hub_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

var dockerTarget = api.RuntimeTarget{Type: api.RuntimeTargetDocker}

// wireBroker is a broker speaking the control channel by hand, so that a
// test sees the very commands the Hub sends: it answers every create with
// a running container and hands the spec to specs.
func wireBroker(t *testing.T, e *testenv.Env, creds api.BrokerCredentials, target *api.RuntimeTarget) <-chan wire.AgentSpec {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := http.Header{}
	wire.SignHeaders(h, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: http.MethodGet, Path: connectPath}, time.Now())
	c, _, err := dialControl(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+connectPath, h, wire.Options{})
	if err != nil {
		cancel()
		t.Fatalf("dial: %v", err)
	}
	specs := make(chan wire.AgentSpec, 16)
	c.Handle(wire.MethodAgentCreate, func(_ context.Context, req *wire.Request) (any, error) {
		var s wire.AgentSpec
		if err := req.Decode(&s); err != nil {
			return nil, err
		}
		specs <- s
		return wire.AgentStatus{AgentID: s.AgentID, RunID: s.RunID, ProjectID: s.ProjectID, State: api.ContainerRunning, ObservedAt: time.Now().UnixNano()}, nil
	})
	done := make(chan struct{})
	if err := c.Start(ctx, func(error) { close(done) }); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close("done"); cancel(); <-done })
	var reply wire.HelloReply
	if err := c.Call(ctx, wire.MethodHello, wire.Hello{ProtocolVersion: wire.ProtocolVersion, BrokerID: creds.BrokerID, Name: creds.Name,
		Version: "test", Runtime: "fake", Capabilities: []string{}, Inventory: []wire.AgentStatus{}, RuntimeTarget: target}, &reply); err != nil {
		t.Fatalf("hello: %v", err)
	}
	e.WaitBrokerStatus(creds.BrokerID, api.BrokerOnline)
	return specs
}

// TestFlatAgentIsPinned: an agent placed on a flat broker, here by the
// project's default broker, is pinned to it and its target: the create
// command the broker receives carries the pin and no profile (the
// project's active profile is not applied), and the agent's record shows
// pinnedRuntimeTarget on get and list. A profile named in the request is
// refused 400 and creates nothing.
func TestFlatAgentIsPinned(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		setExperiment(t, e, api.ExperimentFlatRuntimeBrokers, true)
		creds, err := e.Hub.RegisterFlatBroker(ctx, "k8s-batch", hub.BootstrapAdminID, false, k8sBatch, nil)
		if err != nil {
			t.Fatal(err)
		}
		specs := wireBroker(t, e, creds, &k8sBatch)
		if _, err := e.Admin.ProvideProject(ctx, creds.BrokerID, "default"); err != nil {
			t.Fatal(err)
		}
		active, def := "gpu", creds.BrokerID
		if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{ActiveProfile: &active, DefaultBroker: &def}); err != nil {
			t.Fatal(err)
		}
		want := api.PinnedRuntimeTarget{BrokerID: creds.BrokerID, RuntimeTarget: k8sBatch}
		a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		if a.PinnedRuntimeTarget == nil || *a.PinnedRuntimeTarget != want || a.Profile != "" || a.BrokerID != creds.BrokerID {
			t.Fatalf("created %+v (pin %v), want pin %v and no profile", a, a.PinnedRuntimeTarget, want)
		}
		select {
		case s := <-specs:
			if s.Pin == nil || *s.Pin != want || s.Profile != "" {
				t.Fatalf("the broker's create carries pin %v, profile %q; want %v, none", s.Pin, s.Profile, want)
			}
		default:
			t.Fatal("the broker received no create")
		}
		got, err := e.Admin.GetAgent(ctx, "w", "default")
		if err != nil || got.PinnedRuntimeTarget == nil || *got.PinnedRuntimeTarget != want {
			t.Fatalf("get: %+v, %v", got, err)
		}
		list, err := e.Admin.ListAgents(ctx, client.AgentFilter{Project: "default"}, "", 10)
		if err != nil || len(list.Items) != 1 || list.Items[0].PinnedRuntimeTarget == nil || *list.Items[0].PinnedRuntimeTarget != want {
			t.Fatalf("list: %+v, %v", list, err)
		}
		_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "p", Project: "default", Profile: "gpu", Command: []string{"x"}})
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		if !strings.Contains(err.Error(), "flat instance serving kubernetes:batch-cluster/agents") {
			t.Fatalf("the refusal should say why: %v", err)
		}
		if _, err := e.Admin.GetAgent(ctx, "p", "default"); !api.IsCode(err, api.CodeAgentNotFound) {
			t.Fatalf("a refused create left a record: %v", err)
		}
	})
}

// TestFlatHello: a broker's hello records its runtime target. One
// registered as a regular broker that declares a target while the
// experiment is off is refused (its record unchanged, the broker kept
// offline and retrying) and comes online once the experiment is on; a
// recorded flat broker keeps connecting after the experiment is turned
// off; a hello without a target clears the record's.
func TestFlatHello(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg, MaxBackoff: 200 * time.Millisecond})
		ctx := context.Background()
		creds, err := e.Hub.RegisterBroker(ctx, "later-flat", hub.BootstrapAdminID, false)
		if err != nil {
			t.Fatal(err)
		}
		b := e.NewBroker(creds.BrokerID, creds.Name, creds.Secret)
		b.RuntimeTarget = &dockerTarget
		e.LaunchBroker(b, fake.New())
		wait.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
			if r := b.Status().Refused; !strings.Contains(r, api.CodeExperimentDisabled) {
				return fmt.Errorf("the broker's refusal is %q, want %s", r, api.CodeExperimentDisabled)
			}
			return nil
		})
		got, err := e.Admin.GetBroker(ctx, creds.BrokerID)
		if err != nil || got.Status != api.BrokerOffline || got.RuntimeTarget != nil || got.Version != "" {
			t.Fatalf("a refused hello changed the record: %+v, %v", got, err)
		}
		setExperiment(t, e, api.ExperimentFlatRuntimeBrokers, true)
		e.WaitBrokerStatus(creds.BrokerID, api.BrokerOnline)
		if got, err = e.Admin.GetBroker(ctx, creds.BrokerID); err != nil || got.RuntimeTarget == nil || *got.RuntimeTarget != dockerTarget {
			t.Fatalf("after the experiment is on: %+v, %v", got, err)
		}

		// Recorded with a target: the experiment going off does not
		// lock the broker out.
		setExperiment(t, e, api.ExperimentFlatRuntimeBrokers, false)
		e.StopBroker(b)
		e.WaitBrokerStatus(creds.BrokerID, api.BrokerOffline)
		e.StartBroker(b, b.Runtime)
		if got, err = e.Admin.GetBroker(ctx, creds.BrokerID); err != nil || got.RuntimeTarget == nil || *got.RuntimeTarget != dockerTarget {
			t.Fatalf("a recorded flat broker after the experiment went off: %+v, %v", got, err)
		}

		// The broker no longer serves a single target.
		e.StopBroker(b)
		e.WaitBrokerStatus(creds.BrokerID, api.BrokerOffline)
		b.RuntimeTarget = nil
		e.StartBroker(b, b.Runtime)
		if got, err = e.Admin.GetBroker(ctx, creds.BrokerID); err != nil || got.RuntimeTarget != nil {
			t.Fatalf("a hello without a target should clear it: %+v, %v", got, err)
		}
	})
}

// TestFlatBrokersCapacityPerInstance (issue 15's concurrency acceptance):
// two flat instances with maxAgents 10 and 20; 200 concurrent starting
// creates spread across both with --broker: exactly 10 and 20 run, every
// other create is 429 quota_exceeded, and each reservation is held on the
// agent's own broker (no slot counted on the other instance).
func TestFlatBrokersCapacityPerInstance(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		setExperiment(t, e, api.ExperimentFlatRuntimeBrokers, true)
		ten, twenty := 10, 20
		small := e.AddFlatBroker("docker-a", dockerTarget, &ten)
		big := e.AddFlatBroker("k8s-batch", k8sBatch, &twenty)
		caps := map[string]int{small.ID: 10, big.ID: 20}
		var wg sync.WaitGroup
		var mu sync.Mutex
		created := map[string]int{}
		refused := 0
		var other []error
		sem := make(chan struct{}, 32)
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				b := small
				if i%2 == 1 {
					b = big
				}
				a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: fmt.Sprintf("c%03d", i), Project: "default", Broker: b.Name, Start: true, Command: []string{"x"}})
				mu.Lock()
				defer mu.Unlock()
				var ae *api.Error
				switch {
				case err == nil && a.BrokerID == b.ID:
					created[b.ID]++
				case err == nil:
					other = append(other, fmt.Errorf("agent %s placed on %s, asked for %s", a.Slug, a.BrokerID, b.ID))
				case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests && ae.Code == api.CodeQuotaExceeded:
					refused++
				default:
					other = append(other, err)
				}
			}()
		}
		wg.Wait()
		if len(other) > 0 {
			t.Fatalf("unexpected outcomes: %v", other[:min(3, len(other))])
		}
		if created[small.ID] != 10 || created[big.ID] != 20 || refused != 170 {
			t.Fatalf("created %d on docker-a, %d on k8s-batch, %d refused; want 10, 20 and 170", created[small.ID], created[big.ID], refused)
		}
		running, err := e.Admin.ListAgents(ctx, client.AgentFilter{Project: "default"}, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if running.Total != 30 {
			t.Fatalf("%d agent records, want the 30 created (refused creates leave none)", running.Total)
		}
		onBroker := map[string]string{} // agent ID -> its broker
		pinned := map[string]int{}
		for _, a := range running.Items {
			if a.Phase != api.PhaseRunning {
				t.Fatalf("agent %s is %s, want running", a.Slug, a.Phase)
			}
			if a.PinnedRuntimeTarget == nil || a.PinnedRuntimeTarget.BrokerID != a.BrokerID {
				t.Fatalf("agent %s on %s is pinned to %v", a.Slug, a.BrokerID, a.PinnedRuntimeTarget)
			}
			onBroker[a.ID] = a.BrokerID
			pinned[a.BrokerID]++
		}
		for _, b := range []*testenv.Broker{small, big} {
			held, err := e.Store.ReservedAgents(ctx, b.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(held) != caps[b.ID] || pinned[b.ID] != caps[b.ID] {
				t.Fatalf("broker %s: %d reservations, %d agents; want %d each", b.Name, len(held), pinned[b.ID], caps[b.ID])
			}
			for _, id := range held {
				if onBroker[id] != b.ID {
					t.Fatalf("broker %s holds a reservation for agent %s, which is on %q", b.Name, id, onBroker[id])
				}
			}
			inv, _ := b.Runtime.Inventory(ctx)
			if len(inv) != caps[b.ID] {
				t.Fatalf("broker %s runs %d containers, want %d", b.Name, len(inv), caps[b.ID])
			}
			v, err := e.Admin.GetBroker(ctx, b.ID)
			if err != nil || v.RunningAgents != caps[b.ID] || v.EffectiveMaxAgents != caps[b.ID] {
				t.Fatalf("broker %s view: %+v, %v", b.Name, v, err)
			}
		}
	})
}
