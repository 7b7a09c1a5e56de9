package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// norm is what a store makes of a caller's time.
func norm(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// oddTime is a time a store must normalise: it has nanoseconds and a
// non-UTC zone. It is in the past so UpdatedAt moves forward.
func oddTime() time.Time {
	loc := time.FixedZone("UTC+5:30", 5*3600+1800)
	return time.Now().Add(-time.Hour).In(loc).Add(789 * time.Nanosecond)
}

func newProject(t testing.TB, s store.Store, name string) *store.Project {
	t.Helper()
	p := &store.Project{Name: name, SharingMode: api.SharingWorktreePerAgent}
	must(t, s.CreateProject(t.Context(), p))
	return p
}

func newBroker(t testing.TB, s store.Store, name string) *store.Broker {
	t.Helper()
	b := &store.Broker{Name: name, Status: api.BrokerOnline, Secret: []byte("k-" + name)}
	must(t, s.CreateBroker(t.Context(), b))
	return b
}

func newAgent(t testing.TB, s store.Store, projectID, slug, brokerID string) *store.Agent {
	t.Helper()
	a := &store.Agent{Slug: slug, ProjectID: projectID, BrokerID: brokerID, Harness: "generic", Phase: api.PhaseCreated}
	must(t, s.CreateAgent(t.Context(), a, nil))
	return a
}

// fullAgent has every field set, to check nothing is dropped on the way.
func fullAgent(projectID, slug, brokerID string) *store.Agent {
	started := oddTime()
	return &store.Agent{
		Slug:            slug,
		ProjectID:       projectID,
		BrokerID:        brokerID,
		Profile:         "docker",
		Harness:         "claude",
		Image:           "ghcr.io/scion/claude:1",
		Command:         []string{"claude", "--print", "hello world"},
		Env:             map[string]string{"A": "1", "EMPTY": "", "UNICODE": "héllo ✓"},
		Ports:           []int{8080, 9090},
		PortMappings:    []api.PortMapping{{ContainerPort: 8080, HostPort: 31000, Protocol: "tcp"}, {ContainerPort: 9090, HostPort: 31001, Protocol: "udp"}},
		Phase:           api.PhaseProvisioning,
		StatusMessage:   "pulling image",
		ContainerStatus: api.ContainerCreated,
		RunID:           "run-1",
		Generation:      2,
		Generations: []api.Generation{
			{Number: 1, BrokerID: brokerID, RunID: "run-0", StartedAt: started, Reason: "create"},
			{Number: 2, BrokerID: brokerID, RunID: "run-1", StartedAt: started.Add(time.Minute), Reason: "restart"},
		},
		Role:            "worker",
		CreatedBy:       "user-1",
		Delegator:       "user-2",
		ParentAgentID:   "agent-0",
		Scopes:          []string{"agents:read", "secrets:read"},
		DelegationChain: []string{"user:u1", "agent:a7"},
		Passthrough:     "gcp",
		SecretNames:     []string{"GITHUB_TOKEN", "NPM_TOKEN"},
		// Spacing and key order must survive: the payload is the caller's bytes.
		Payload:   []byte(`{"z": 1, "a": [true, null], "s": "x"}`),
		CreatedAt: oddTime(),
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

func agentIDs(as []*store.Agent) []string {
	return ids(as, func(a *store.Agent) string { return a.ID })
}

func slug(i int) string { return fmt.Sprintf("agent-%04d", i) }
