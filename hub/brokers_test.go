package hub_test

import (
	"context"
	"errors"
	"io"
	"strings"
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

// A broker that still has agents is not deregistered without force: the
// refusal lists them, and nothing changes. Forced, its agents keep their
// records and reservations and answer runtime_broker_missing for what
// needs the broker; a forced delete removes such an agent's record and
// logs that its workload may still run. The broker stops being the
// project's default and the Hub's.
func TestDeregisterBrokerWithAgents(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		logs := &syncBuffer{}
		e := testenv.New(t, testenv.Options{Postgres: pg, Brokers: 2, LogTo: logs})
		ctx := context.Background()
		b1 := e.Brokers()[0]
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Broker: "b1", Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{DefaultBroker: ptr("b1")}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Admin.PutSettings(ctx, api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultRuntimeBroker: "b1"}}); err != nil {
			t.Fatal(err)
		}

		err := e.Admin.DeregisterBroker(ctx, b1.ID)
		apiErr(t, err, 409, api.CodeBrokerHasAgents)
		var ae *api.Error
		errors.As(err, &ae)
		if names, _ := ae.Details["agents"].([]any); len(names) != 1 || names[0] != "default/w" || ae.Details["total"] != float64(1) {
			t.Fatalf("refusal details = %v, want agents [default/w], total 1", ae.Details)
		}
		if br, err := e.Admin.GetBroker(ctx, b1.ID); err != nil || br.RunningAgents != 1 {
			t.Fatalf("after the refusal: %+v %v", br, err)
		}

		if err := e.Admin.ForceDeregisterBroker(ctx, b1.ID); err != nil {
			t.Fatal(err)
		}
		_, err = e.Admin.GetBroker(ctx, b1.ID)
		apiErr(t, err, 404, api.CodeBrokerNotFound)
		if p, err := e.Admin.GetProject(ctx, "default"); err != nil || p.DefaultBrokerID != "" {
			t.Fatalf("project default after deregistration: %+v %v", p, err)
		}
		if st, err := e.Admin.GetSettings(ctx); err != nil || st.AgentDefaults.DefaultRuntimeBroker != "" {
			t.Fatalf("hub default after deregistration: %+v %v", st, err)
		}
		// Its capacity slot is not released: nothing tore the workload down.
		if n, err := e.Store.CountReservations(ctx, b1.ID); err != nil || n != 1 {
			t.Fatalf("reservations of the stranded agent: %d %v, want 1", n, err)
		}
		if !strings.Contains(logs.String(), "deregistered with force") {
			t.Error("the forced deregistration was not logged")
		}

		// What needs the broker answers runtime_broker_missing.
		for _, act := range []string{"start", "stop", "restart"} {
			_, err = e.Admin.AgentAction(ctx, "w", "default", act)
			apiErr(t, err, 409, api.CodeBrokerMissing)
		}
		_, err = e.Admin.Logs(ctx, "w", "default", false, 0)
		apiErr(t, err, 409, api.CodeBrokerMissing)
		_, err = e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"true"}}, io.Discard, io.Discard)
		apiErr(t, err, 409, api.CodeBrokerMissing)
		err = e.Admin.DeleteAgent(ctx, "w", "default")
		apiErr(t, err, 409, api.CodeBrokerMissing)
		if _, err := e.Admin.GetAgent(ctx, "w", "default"); err != nil {
			t.Fatalf("a plain delete removed the record: %v", err)
		}

		if err := e.Admin.ForceDeleteAgent(ctx, "w", "default"); err != nil {
			t.Fatal(err)
		}
		_, err = e.Admin.GetAgent(ctx, "w", "default")
		apiErr(t, err, 404, api.CodeAgentNotFound)
		if n, err := e.Store.CountReservations(ctx, b1.ID); err != nil || n != 0 {
			t.Fatalf("reservations after the forced delete: %d %v, want 0", n, err)
		}
		if !strings.Contains(logs.String(), "its workload may still run") {
			t.Error("the forced agent delete was not logged")
		}
		// The cascade works without the stale defaults: b2 is the only
		// provider left.
		a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w2", Project: "default", Command: []string{"x"}})
		if err != nil || a.BrokerName != "b2" {
			t.Fatalf("create after deregistration: %+v %v", a, err)
		}
	})
}

// Force on an agent whose broker is only offline changes nothing: the
// record stays until the broker can delete the workload.
func TestForceDeleteNeedsMissingBroker(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	b := e.Brokers()[0]
	e.StopBroker(b)
	e.WaitBrokerStatus(b.ID, api.BrokerOffline)
	err := e.Admin.ForceDeleteAgent(ctx, "w", "default")
	apiErr(t, err, 503, api.CodeBrokerOffline)
	if _, err := e.Admin.GetAgent(ctx, "w", "default"); err != nil {
		t.Fatalf("forced delete with an offline broker removed the record: %v", err)
	}
	// An idle broker is deregistered without force.
	idle := e.AddBroker("idle")
	if err := e.Admin.DeregisterBroker(ctx, idle.ID); err != nil {
		t.Fatal(err)
	}
}
