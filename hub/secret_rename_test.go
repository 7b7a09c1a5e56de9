package hub_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// A secret name means the project's secret when there is one, else the
// hub-wide one. A project secret set after an agent was created under a
// name that then meant the hub-wide secret is not what its creator was
// allowed to name: a start that creates the agent again, and an agent
// handing on what it was given, must not deliver the project's value.

// TestRecreateRechecksNamedSecrets: a member's agent named the hub-wide
// KEY and its create failed; the project's owner then sets a project KEY.
// The member's start (which creates the agent again) is refused and takes
// no slot; the owner's start delivers the project's value.
func TestRecreateRechecksNamedSecrets(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.PutSecret(ctx, "", "KEY", "hub-value"); err != nil {
		t.Fatal(err)
	}
	member := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	e.Brokers()[0].Runtime.FailNext("Create", errors.New("disk full"))
	_, err := member.CreateAgent(ctx, api.CreateAgentRequest{Name: "m", Project: "default", Start: true, Command: []string{"x"}, Secrets: []string{"KEY"}})
	apiErr(t, err, http.StatusBadGateway, api.CodeRuntimeError)
	if _, err := e.Admin.PutSecret(ctx, "default", "KEY", "project-value"); err != nil {
		t.Fatal(err)
	}
	_, err = member.AgentAction(ctx, "m", "default", "start")
	apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
	if a, err := e.Admin.GetAgent(ctx, "m", "default"); err != nil || a.Phase != api.PhaseError {
		t.Fatalf("after the refused start: %+v (%v), want it still in phase error", a, err)
	}
	if n := runningAgents(t, e, e.Brokers()[0].ID); n != 0 {
		t.Fatalf("a refused start holds %d slots", n)
	}
	// The admin may name the project's secret: its start creates the
	// agent with it.
	if _, err := e.Admin.AgentAction(ctx, "m", "default", "start"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "m", "default", api.ExecRequest{Command: []string{"env", "KEY"}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "project-value" {
		t.Fatalf("KEY = %q after the admin's start", got)
	}
}

// TestAgentHandsOnOnlyTheSecretItWasGiven: an agent given the hub-wide
// KEY cannot hand on the project KEY set after it was created.
func TestAgentHandsOnOnlyTheSecretItWasGiven(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.PutSecret(ctx, "", "KEY", "hub-value"); err != nil {
		t.Fatal(err)
	}
	member := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	if _, err := member.CreateAgent(ctx, api.CreateAgentRequest{Name: "parent", Project: "default", Start: true, Command: []string{"x"}, Secrets: []string{"KEY"}}); err != nil {
		t.Fatal(err)
	}
	var tok bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "parent", "default", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &tok, nil); err != nil {
		t.Fatal(err)
	}
	as := client.New(e.URL, strings.TrimSpace(tok.String()))
	// What it was given, it hands on.
	if _, err := as.CreateAgent(ctx, api.CreateAgentRequest{Name: "child1", Command: []string{"x"}, Secrets: []string{"KEY"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.PutSecret(ctx, "default", "KEY", "project-value"); err != nil {
		t.Fatal(err)
	}
	_, err := as.CreateAgent(ctx, api.CreateAgentRequest{Name: "child2", Command: []string{"x"}, Secrets: []string{"KEY"}})
	apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
	if _, err := e.Admin.GetAgent(ctx, "child2", "default"); err == nil {
		t.Fatal("the refused create left an agent")
	}
}

// TestSecretNamesAreChecked: a secret named in a create follows the
// secret name rule, and a refusal does not echo a huge name.
func TestSecretNamesAreChecked(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	for _, name := range []string{strings.Repeat("A", 100_000), "A\nB", "../x", ""} {
		_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "s", Project: "default", Command: []string{"x"}, Secrets: []string{name}})
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		var ae *api.Error
		if errors.As(err, &ae); len(ae.Message) > 300 {
			t.Fatalf("the refusal echoes %d bytes", len(ae.Message))
		}
	}
	if _, err := e.Admin.GetAgent(ctx, "s", "default"); err == nil {
		t.Fatal("a refused create left an agent")
	}
}
