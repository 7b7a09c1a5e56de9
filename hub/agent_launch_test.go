package hub_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// An agent-launched agent is placed by the same cascade as any other
// create: never on its creator's broker or profile unless the cascade
// selects them.
func TestAgentLaunchedAgentFollowsTheCascade(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 2})
	ctx := context.Background()
	parent, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "parent", Project: "default", Broker: "b1", Profile: "gpu", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own credentials, as its container sees them.
	var tok bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "parent", "default", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &tok, nil); err != nil {
		t.Fatal(err)
	}
	as := client.New(e.URL, strings.TrimSpace(tok.String()))
	w, err := as.Whoami(ctx)
	if err != nil || w.Kind != "agent" || w.ID != parent.ID {
		t.Fatalf("agent identity: %+v %v", w, err)
	}
	// Two providers and no default: the agent, like anyone, must choose.
	_, err = as.CreateAgent(ctx, api.CreateAgentRequest{Name: "child", Command: []string{"x"}})
	apiErr(t, err, 409, api.CodeMultipleBrokers)

	// With the project's default broker set to b2, the child lands there,
	// not on its creator's b1, and does not inherit the creator's profile.
	if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{DefaultBroker: ptr("b2")}); err != nil {
		t.Fatal(err)
	}
	child, err := as.CreateAgent(ctx, api.CreateAgentRequest{Name: "child", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if child.BrokerName != "b2" || child.Profile == "gpu" || child.ParentAgentID != parent.ID || child.ProjectID != parent.ProjectID {
		t.Fatalf("child = broker %s profile %q parent %s", child.BrokerName, child.Profile, child.ParentAgentID)
	}
	// The project's active profile applies to agent-launched agents too.
	if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{ActiveProfile: ptr("k8s")}); err != nil {
		t.Fatal(err)
	}
	c2, err := as.CreateAgent(ctx, api.CreateAgentRequest{Name: "child2", Command: []string{"x"}})
	if err != nil || c2.Profile != "k8s" {
		t.Fatalf("child2 profile %q (%v), want the project's active profile", c2.Profile, err)
	}
	// An explicit --broker naming the creator's broker is honoured.
	c3, err := as.CreateAgent(ctx, api.CreateAgentRequest{Name: "child3", Broker: "b1", Command: []string{"x"}})
	if err != nil || c3.BrokerName != "b1" {
		t.Fatalf("child3 on %q (%v), want b1", c3.BrokerName, err)
	}
	// Agents never update projects.
	_, err = as.UpdateProject(ctx, "default", api.UpdateProjectRequest{ActiveProfile: ptr("x")})
	apiErr(t, err, 403, api.CodeForbidden)
}

func ptr[T any](v T) *T { return &v }
