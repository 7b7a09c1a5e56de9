package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// The benchmarks model the Hub's agent-creation path: CreateAgent with a
// capacity reservation (limit 0, so the cost does not depend on how many
// agents earlier iterations left behind), then one UpdateAgent as the
// broker reports the container. Each reports creates/s.

type benchEnv struct {
	s        store.Store
	project  string
	broker   string
	seq      atomic.Int64
	noLimit  int
	template store.Agent
}

func newBenchEnv(b *testing.B, s store.Store) *benchEnv {
	b.Helper()
	p := &store.Project{Name: "bench", SharingMode: api.SharingWorktreePerAgent}
	must(b, s.CreateProject(b.Context(), p))
	br := &store.Broker{Name: "bench", Status: api.BrokerOnline, Secret: []byte("secret")}
	must(b, s.CreateBroker(b.Context(), br))
	e := &benchEnv{s: s, project: p.ID, broker: br.ID}
	e.template = store.Agent{
		ProjectID: p.ID, BrokerID: br.ID, Profile: "docker", Harness: "claude", Image: "ghcr.io/scion/claude:1",
		Command: []string{"claude", "--dangerously-skip-permissions", "--print"},
		Env:     map[string]string{"ANTHROPIC_MODEL": "x", "SCION_HUB": "http://hub:8080", "TERM": "xterm"},
		Phase:   api.PhaseProvisioning,
		Role:    "worker", CreatedBy: "user-1",
		Payload: []byte(`{"task":"fix the flaky test","branch":"agent/x"}`),
	}
	return e
}

func (e *benchEnv) create(b *testing.B) *store.Agent {
	a := e.template
	n := e.seq.Add(1)
	a.Slug = fmt.Sprintf("agent-%d", n)
	a.Generations = []api.Generation{{Number: 1, BrokerID: e.broker, StartedAt: time.Now()}}
	if err := e.s.CreateAgent(b.Context(), &a, &e.noLimit); err != nil {
		b.Fatal(err)
	}
	return &a
}

func (e *benchEnv) update(b *testing.B, a *store.Agent) {
	a.Phase, a.ContainerStatus, a.RunID = api.PhaseRunning, api.ContainerRunning, "run-1"
	if err := e.s.UpdateAgent(b.Context(), a); err != nil {
		b.Fatal(err)
	}
}

func report(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchCreateAgent measures CreateAgent with a reservation.
func BenchCreateAgent(b *testing.B, s store.Store) {
	e := newBenchEnv(b, s)
	for b.Loop() {
		e.create(b)
	}
	report(b)
}

// BenchCreateAndUpdateAgent measures CreateAgent plus one UpdateAgent.
func BenchCreateAndUpdateAgent(b *testing.B, s store.Store) {
	e := newBenchEnv(b, s)
	for b.Loop() {
		e.update(b, e.create(b))
	}
	report(b)
}

// BenchCreateAndUpdateAgentParallel is BenchCreateAndUpdateAgent from
// concurrent goroutines, as concurrent API requests do it.
func BenchCreateAndUpdateAgentParallel(b *testing.B, s store.Store) {
	e := newBenchEnv(b, s)
	b.SetParallelism(4) // 4 goroutines per GOMAXPROCS: requests block on I/O
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.update(b, e.create(b))
		}
	})
	report(b)
}
