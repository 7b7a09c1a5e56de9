package hub_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestRestartAndResumeCreateAgainAnAgentWhoseCreateFailed: restart and
// resume of an agent whose create failed (phase error, nothing on the
// broker) do what start does: they create it again, and it runs with
// its slot, instead of passing on the broker's agent_not_found for a
// container that never existed. Afterwards they act on the container as
// usual.
func TestRestartAndResumeCreateAgainAnAgentWhoseCreateFailed(t *testing.T) {
	for _, action := range []string{"restart", "resume"} {
		t.Run(action, func(t *testing.T) {
			e := testenv.New(t, testenv.Options{Brokers: 1})
			ctx := context.Background()
			rt := e.Brokers()[0].Runtime
			rt.FailNext("Create", errors.New("disk full"))
			_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "again", Project: "default", Start: true, Command: []string{"x"}})
			apiErr(t, err, http.StatusBadGateway, api.CodeRuntimeError)
			failed, err := e.Admin.GetAgent(ctx, "again", "default")
			if err != nil || failed.Phase != api.PhaseError {
				t.Fatalf("failed agent: %+v (%v)", failed, err)
			}
			got, err := e.Admin.AgentAction(ctx, "again", "default", action)
			if err != nil || got.Phase != api.PhaseRunning || got.ID != failed.ID {
				t.Fatalf("%s of an agent whose create failed: %+v (%v), want it created again and running", action, got, err)
			}
			if n := rt.Calls("Create"); n != 2 {
				t.Fatalf("runtime saw %d creates, want 2", n)
			}
			if n := runningAgents(t, e, e.Brokers()[0].ID); n != 1 {
				t.Fatalf("%d slots held, want 1", n)
			}
			// Now there is a container: the action reaches it, no create.
			if action == "resume" {
				if _, err := e.Admin.AgentAction(ctx, "again", "default", "suspend"); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := e.Admin.AgentAction(ctx, "again", "default", action); err != nil || got.Phase != api.PhaseRunning {
				t.Fatalf("second %s: %+v (%v)", action, got, err)
			}
			if n := rt.Calls("Create"); n != 2 {
				t.Fatalf("runtime saw %d creates after a plain %s, want 2", n, action)
			}
		})
	}
}
