package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// When the Hub cannot choose a broker, the CLI prints the choices it sent
// (details.brokers), so the user can pass one with --broker: on a real Hub,
// project web has two providers and no default broker.
func TestSelectionRequiredPrintsChoices(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	ctx := context.Background()
	if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"zeta", "alpha"} {
		if _, err := e.Admin.ProvideProject(ctx, e.AddBroker(name).ID, "web"); err != nil {
			t.Fatal(err)
		}
	}
	useHub(t, "team", e.URL, e.AdminToken)
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
	e := newHub(t, testenv.Options{})
	mustRun(t, "hub", "add", "team", e.URL, "--use")
	r := runCLI(t, "", "runtime-broker", "join", "--token", joinToken(t, e, "gpu-box"), "--name", "myhost")
	if r.code != 0 {
		t.Fatalf("join: %+v", r)
	}
	if !strings.Contains(r.err, "made for the name gpu-box") || !strings.Contains(r.out, "Registered Runtime Broker gpu-box") {
		t.Errorf("join output %+v", r)
	}
	if c := loadCreds(t).ForHub(e.URL); c == nil || c.BrokerName != "gpu-box" || c.BrokerID != brokerID(t, e, "gpu-box") {
		t.Errorf("connection %+v", c)
	}
}

// deregister without --force prints the agents the Hub lists and keeps
// the stored connection; with --force the Hub deregisters the broker
// anyway. delete --force deletes an agent whose broker is gone.
func TestDeregisterForce(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	ctx := context.Background()
	if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "web"}); err != nil {
		t.Fatal(err)
	}
	gpu := e.AddBroker("gpu")
	if _, err := e.Admin.ProvideProject(ctx, gpu.ID, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "web", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	useHub(t, "team", e.URL, e.AdminToken)
	saveCreds(t, conn("gpu", e.URL, gpu.ID))

	r := runCLI(t, "", "runtime-broker", "deregister")
	if r.code != 1 || !strings.Contains(r.err, "error: runtime_broker_has_agents: ") || !strings.Contains(r.err, "\nAgents: web/w\n") {
		t.Fatalf("refused deregister: %+v", r)
	}
	if len(loadCreds(t).Connections) != 1 {
		t.Fatal("a refused deregistration removed the stored connection")
	}
	if _, err := e.Admin.GetBroker(ctx, gpu.ID); err != nil {
		t.Fatalf("the refused deregistration removed the broker: %v", err)
	}
	mustRun(t, "runtime-broker", "deregister", "--force")
	if _, err := e.Admin.GetBroker(ctx, gpu.ID); !api.IsCode(err, api.CodeBrokerNotFound) {
		t.Fatalf("after deregister --force: %v, want runtime_broker_not_found", err)
	}
	if len(loadCreds(t).Connections) != 0 {
		t.Fatal("the forced deregistration kept the stored connection")
	}

	if r := runCLI(t, "", "delete", "w", "--project", "web"); r.code != 1 {
		t.Errorf("delete of an agent whose broker is gone, without --force: %+v", r)
	}
	mustRun(t, "delete", "w", "--project", "web", "--force")
	if _, err := e.Admin.GetAgent(ctx, "w", "web"); !api.IsCode(err, api.CodeAgentNotFound) {
		t.Fatalf("after delete --force: %v, want agent_not_found", err)
	}
}
