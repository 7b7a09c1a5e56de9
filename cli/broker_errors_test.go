package cli

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// When the Hub cannot choose a broker, the CLI prints the choices it sent
// (details.brokers), so the user can pass one with --broker.
func TestSelectionRequiredPrintsChoices(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "tok")
	useHub(t, "team", h, "tok")
	h.createErr = api.Errorf(api.CodeMultipleBrokers,
		"project %q has several runtime brokers; choose one with --broker, or set the project's default broker", "web").
		WithDetail("brokers", []string{"alpha", "zeta"})
	r := runCLI(t, "", "create", "fixer", "--project", "web")
	if r.code != 1 {
		t.Fatalf("exit %d: %+v", r.code, r)
	}
	lines := strings.Split(strings.TrimSpace(r.err), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: runtime_broker_selection_required: ") ||
		lines[1] != "Choose one with --broker: alpha, zeta" {
		t.Fatalf("stderr = %q", r.err)
	}
}

// A refused deregistration lists the agents that still run on the broker.
func TestDeregisterRefusalPrintsAgents(t *testing.T) {
	var b strings.Builder
	e := api.Conflict(api.CodeBrokerHasAgents, "runtime broker %q still has 3 agents", "gpu").
		WithDetail("agents", []any{"web/a1", "web/a2"}).WithDetail("total", float64(3))
	printErrorDetails(&b, e)
	if got := b.String(); got != "Agents: web/a1, web/a2 (and 1 more)\n" {
		t.Fatalf("printed %q", got)
	}
}

// A join token made for a name registers that name: the CLI saves the
// name the Hub registered, and says so when it differs from the one it
// proposed.
func TestJoinWithNamedToken(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "tok")
	mustRun(t, "hub", "add", "team", h.URL, "--use")
	r := runCLI(t, "", "runtime-broker", "join", "--token", "jt-named", "--name", "myhost")
	if r.code != 0 {
		t.Fatalf("join: %+v", r)
	}
	if !strings.Contains(r.err, "made for the name gpu-box") || !strings.Contains(r.out, "Registered Runtime Broker gpu-box") {
		t.Errorf("join output %+v", r)
	}
	if c := loadCreds(t).ForHub(h.URL); c == nil || c.BrokerName != "gpu-box" {
		t.Errorf("connection %+v", c)
	}
}

// deregister without --force prints the agents the Hub lists and keeps
// the stored connection; with --force it sends force=true. delete --force
// sends force=true too.
func TestDeregisterForce(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	h.brokers = append(h.brokers, &api.RuntimeBroker{ID: "b-1", Name: "gpu", Projects: []string{}})
	useHub(t, "team", h, "tok")
	mustRun(t, "project", "create", "web")
	h.agents = append(h.agents, &api.Agent{ID: "a-1", Slug: "w", ProjectID: h.project("web").ID, BrokerID: "b-1"})
	saveCreds(t, conn("gpu", h.URL, "b-1"))

	r := runCLI(t, "", "runtime-broker", "deregister")
	if r.code != 1 || !strings.Contains(r.err, "error: runtime_broker_has_agents: ") || !strings.Contains(r.err, "\nAgents: "+h.project("web").ID+"/w\n") {
		t.Fatalf("refused deregister: %+v", r)
	}
	if len(loadCreds(t).Connections) != 1 {
		t.Fatal("a refused deregistration removed the stored connection")
	}
	mustRun(t, "runtime-broker", "deregister", "--force")
	if reqs := h.requests("DELETE", "/api/v1/runtime-brokers/b-1"); len(reqs) != 2 || reqs[0].Query != "" || reqs[1].Query != "force=true" {
		t.Fatalf("deregister requests %+v", reqs)
	}
	if len(loadCreds(t).Connections) != 0 {
		t.Fatal("the forced deregistration kept the stored connection")
	}

	mustRun(t, "delete", "w", "--project", "web", "--force")
	if reqs := h.requests("DELETE", "/api/v1/agents/w"); len(reqs) != 1 || !strings.Contains(reqs[0].Query, "force=true") || !strings.Contains(reqs[0].Query, "project=web") {
		t.Fatalf("delete requests %+v", reqs)
	}
}
