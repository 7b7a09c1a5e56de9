package hub_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// TestNoNameShapedLikeAnID: records are looked up by ID, then by name. A
// broker deregistered with force leaves its agents with its ID: a broker
// registered under that ID as its name would then receive what they are
// sent (a start's fresh agent token, a re-create's secrets). No name may
// look like an ID, for brokers, projects and agents alike.
func TestNoNameShapedLikeAnID(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	b1 := e.Brokers()[0]
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Admin.ForceDeregisterBroker(ctx, b1.ID); err != nil {
		t.Fatal(err)
	}
	member := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	_, err := member.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: b1.ID})
	apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = e.Admin.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Name: b1.ID})
	apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = e.Admin.AgentAction(ctx, "w", "default", "restart")
	apiErr(t, err, http.StatusConflict, api.CodeBrokerMissing)

	a, err := e.Admin.GetAgent(ctx, "w", "default")
	if err != nil {
		t.Fatal(err)
	}
	_, err = member.CreateProject(ctx, api.CreateProjectRequest{Name: e.ProjectID})
	apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: a.ID, Project: "default", Command: []string{"x"}})
	apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
}
