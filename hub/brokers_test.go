package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// A project default broker that the caller cannot see is no default for
// that caller: the cascade goes on to the project's single provider (the
// caller is not told that the hidden broker exists). A project token sees
// only AutoProvide brokers and those serving its project.
func TestInvisibleProjectDefaultFallsThrough(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	e.AddBroker("hidden") // AutoProvide off, provides nothing
	member := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	p, err := member.CreateProject(ctx, api.CreateProjectRequest{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.ProvideProject(ctx, "b1", "p"); err != nil {
		t.Fatal(err)
	}
	// A token may dispatch only to AutoProvide brokers.
	if _, err := e.Admin.UpdateBroker(ctx, "b1", api.UpdateBrokerRequest{AutoProvide: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.UpdateProject(ctx, "p", api.UpdateProjectRequest{DefaultBroker: ptr("hidden")}); err != nil {
		t.Fatal(err)
	}
	tok := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, p.ID, []string{"project:read", "project:agent:create"}))
	_, err = tok.GetBroker(ctx, "hidden")
	apiErr(t, err, 404, api.CodeBrokerNotFound)
	a, err := tok.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "p", Command: []string{"x"}})
	if err != nil {
		t.Fatalf("create with an invisible project default: %v (want the single provider b1)", err)
	}
	if a.BrokerName != "b1" {
		t.Fatalf("placed on %q, want b1", a.BrokerName)
	}
}
