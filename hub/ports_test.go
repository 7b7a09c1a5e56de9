package hub_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/fake"
)

// startPortBroker adds a broker with the fake runtime and a small port
// range to e, providing for "default", and waits until it is online.
// (testenv's brokers use the default range, which is too big to exhaust.)
func startPortBroker(t *testing.T, e *testenv.Env, name string, lo, hi int) string {
	t.Helper()
	ctx := context.Background()
	creds, err := e.Hub.RegisterBroker(ctx, name, hub.BootstrapAdminID, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Config{HubEndpoint: e.URL, BrokerID: creds.BrokerID, Name: name,
		Secret: []byte(creds.Secret), Runtime: fake.New(), DataDir: filepath.Join(t.TempDir(), name),
		Logger: slog.New(slog.DiscardHandler), HeartbeatInterval: 200 * time.Millisecond,
		Grace: 600 * time.Millisecond, MaxBackoff: time.Second, PortRange: [2]int{lo, hi}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done }) // before testenv closes the Hub
	e.WaitBrokerStatus(creds.BrokerID, api.BrokerOnline)
	if _, err := e.Admin.ProvideProject(ctx, creds.BrokerID, "default"); err != nil {
		t.Fatal(err)
	}
	return creds.BrokerID
}

func hosts(ms []api.PortMapping) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.HostPort
	}
	return out
}

// TestAgentPorts: published ports through the Hub, on a broker whose
// pool has two ports: the Agent shows them, a stop or delete frees them
// for another agent, an exhausted pool fails the create with
// port_pool_exhausted and leaves the agent in error with capacity
// released, and a start whose ports were taken names the other agent.
func TestAgentPorts(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		bid := startPortBroker(t, e, "ports", 32000, 32001)
		create := func(name string, ports ...int) (*api.Agent, error) {
			return e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Broker: "ports",
				Start: true, Command: []string{"run"}, Ports: ports})
		}
		running := func(want int) {
			t.Helper()
			b, err := e.Admin.GetBroker(ctx, bid)
			if err != nil || b.RunningAgents != want {
				t.Fatalf("broker running agents = %+v (%v), want %d", b, err, want)
			}
		}

		web, err := create("web", 8080, 9090)
		if err != nil {
			t.Fatal(err)
		}
		webPorts := hosts(web.Ports)
		if len(web.Ports) != 2 || web.Ports[0].ContainerPort != 8080 || web.Ports[1].ContainerPort != 9090 ||
			webPorts[0] == webPorts[1] || slices.Min(webPorts) < 32000 || slices.Max(webPorts) > 32001 {
			t.Fatalf("created agent ports = %+v", web.Ports)
		}
		if got, err := e.Admin.GetAgent(ctx, "web", "default"); err != nil || !slices.Equal(hosts(got.Ports), webPorts) {
			t.Fatalf("GET shows ports %+v (%v), want host ports %v", got.Ports, err, webPorts)
		}
		running(1)

		// The pool is empty: the create fails, and the agent records why.
		_, err = create("api", 80)
		apiErr(t, err, http.StatusServiceUnavailable, api.CodePortPoolExhausted)
		failed, err := e.Admin.GetAgent(ctx, "api", "default")
		if err != nil || failed.Phase != api.PhaseError || !strings.Contains(failed.StatusMessage, "port pool exhausted") ||
			len(failed.Ports) != 0 {
			t.Fatalf("agent after exhausted create: %+v (%v)", failed, err)
		}
		running(1)
		if err := e.Admin.DeleteAgent(ctx, "api", "default"); err != nil {
			t.Fatalf("delete the failed agent: %v", err)
		}

		// A stop gives the ports back; another agent gets them.
		stopped, err := e.Admin.AgentAction(ctx, "web", "default", "stop")
		if err != nil || len(stopped.Ports) != 0 {
			t.Fatalf("stopped agent: ports %+v (%v)", stopped.Ports, err)
		}
		db, err := create("db", 5432, 5433)
		if err != nil {
			t.Fatal(err)
		}
		if got := hosts(db.Ports); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(webPorts))) {
			t.Fatalf("db got %v, want the freed %v", got, webPorts)
		}

		// web keeps its host ports for life: db has them now.
		_, err = e.Admin.AgentAction(ctx, "web", "default", "start")
		apiErr(t, err, http.StatusConflict, api.CodeConflict)
		if !strings.Contains(err.Error(), "db") {
			t.Errorf("conflict does not name the agent holding the port: %v", err)
		}
		if got, _ := e.Admin.GetAgent(ctx, "web", "default"); got.Phase != api.PhaseError || !strings.Contains(got.StatusMessage, "host port") {
			t.Fatalf("web after refused start: %+v", got)
		}
		running(1)

		// Deleting db frees them; web starts on its original ports.
		if err := e.Admin.DeleteAgent(ctx, "db", "default"); err != nil {
			t.Fatal(err)
		}
		web, err = e.Admin.AgentAction(ctx, "web", "default", "start")
		if err != nil || web.Phase != api.PhaseRunning || !slices.Equal(hosts(web.Ports), webPorts) {
			t.Fatalf("web restarted with %+v (%v), want host ports %v", web, err, webPorts)
		}
		list, err := e.Admin.ListAllAgents(ctx, client.AgentFilter{Project: "default"})
		if err != nil || len(list) != 1 || !slices.Equal(hosts(list[0].Ports), webPorts) {
			t.Fatalf("list = %+v (%v)", list, err)
		}
		if err := e.Admin.DeleteAgent(ctx, "web", "default"); err != nil {
			t.Fatal(err)
		}
		if _, err := create("last", 1, 2); err != nil {
			t.Fatalf("ports not freed by delete: %v", err)
		}
	})
}

func TestAgentPortsValidated(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	many := make([]int, api.MaxAgentPorts+1)
	for i := range many {
		many[i] = 1000 + i
	}
	for _, ports := range [][]int{{0}, {65536}, {-1}, {8080, 8080}, many} {
		_, err := e.Admin.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "bad", Project: "default",
			Command: []string{"run"}, Ports: ports})
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	}
}

// TestAgentPortsAfterBrokerRestart: the inventory a restarted broker
// reports carries the mappings, and reconciliation records them: a
// running agent keeps its ports, one that exited meanwhile shows none.
func TestAgentPortsAfterBrokerRestart(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	b := e.Brokers()[0]
	keep, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "keep", Project: "default", Start: true,
		Command: []string{"run"}, Ports: []int{8080}})
	if err != nil || len(keep.Ports) != 1 {
		t.Fatalf("create keep: %+v, %v", keep, err)
	}
	gone, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "gone", Project: "default", Start: true,
		Command: []string{"run"}, Ports: []int{8080}})
	if err != nil || len(gone.Ports) != 1 || gone.Ports[0].HostPort == keep.Ports[0].HostPort {
		t.Fatalf("create gone: %+v, %v (keep has %+v)", gone, err, keep.Ports)
	}
	e.StopBroker(b)
	e.WaitBrokerStatus(b.ID, api.BrokerOffline)
	if err := b.Runtime.SimulateExit(gone.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.StartBroker(b, b.Runtime.Restart())
	wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
		g, err := e.Admin.GetAgent(ctx, "gone", "default")
		if err != nil {
			return err
		}
		if g.Phase != api.PhaseStopped || len(g.Ports) != 0 {
			return fmt.Errorf("gone is %s with ports %+v", g.Phase, g.Ports)
		}
		return nil
	})
	k, err := e.Admin.GetAgent(ctx, "keep", "default")
	if err != nil || k.Phase != api.PhaseRunning || !slices.Equal(hosts(k.Ports), hosts(keep.Ports)) {
		t.Fatalf("keep after broker restart: %+v (%v)", k, err)
	}
}
