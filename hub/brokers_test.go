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

// A join refused because the name is taken does not spend the token: the
// retry, once the name is free, registers the broker.
func TestRefusedJoinKeepsToken(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		first, err := e.Admin.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: "gpu"})
		if err != nil {
			t.Fatal(err)
		}
		jt, err := e.Admin.CreateJoinToken(ctx, api.CreateJoinTokenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		anon := client.New(e.URL, "")
		_, err = anon.JoinBroker(ctx, jt.Token, "gpu")
		apiErr(t, err, 409, api.CodeAlreadyExists)
		// The same token, a free name.
		creds, err := anon.JoinBroker(ctx, jt.Token, "gpu2")
		if err != nil || creds.Name != "gpu2" || creds.BrokerID == "" || creds.BrokerID == first.BrokerID {
			t.Fatalf("retry after a refused join: %+v %v", creds, err)
		}
		// Spent now.
		_, err = anon.JoinBroker(ctx, jt.Token, "gpu3")
		apiErr(t, err, 401, api.CodeUnauthorized)
	})
}

// A token made for a name registers that name, whatever name the joining
// machine proposes (its host name by default); a refusal because that
// name is taken keeps the token, and the retry after a deregistration
// works.
func TestJoinTokenNameIsRegistered(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jt, err := e.Admin.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Name: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := e.Admin.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	anon := client.New(e.URL, "")
	_, err = anon.JoinBroker(ctx, jt.Token, "myhost")
	apiErr(t, err, 409, api.CodeAlreadyExists)
	if _, err := e.Admin.GetBroker(ctx, "myhost"); err == nil {
		t.Fatal("the refused join registered the host name")
	}
	if err := e.Admin.DeregisterBroker(ctx, old.BrokerID); err != nil {
		t.Fatal(err)
	}
	creds, err := anon.JoinBroker(ctx, jt.Token, "myhost")
	if err != nil {
		t.Fatal(err)
	}
	if creds.Name != "gpu-box" {
		t.Fatalf("joined as %q, want the token's name gpu-box", creds.Name)
	}
	b, err := e.Admin.GetBroker(ctx, creds.BrokerID)
	if err != nil || b.Name != "gpu-box" {
		t.Fatalf("registered broker: %+v %v", b, err)
	}
	// A token for a name that can never register is refused when made.
	_, err = e.Admin.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Name: "Bad Name"})
	apiErr(t, err, 400, api.CodeInvalidRequest)
}
