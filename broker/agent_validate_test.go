package broker

import (
	"fmt"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/agentcases"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// TestCreateSharedCases: the broker answers an agent.create of every
// value of the shared table as every other layer does: created, or
// refused with invalid_request before anything is made (a forged or
// older Hub's spec gets no further than the Hub's own would).
func TestCreateSharedCases(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	b := startBroker(t, hub, rt, nil)
	waitConnected(t, b)
	for i, tc := range agentcases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := tc.Apply("proj")
			s := spec(fmt.Sprintf("case-%d", i))
			s.Slug, s.Image, s.Harness, s.Profile, s.Command, s.Ports, s.Kubernetes = r.Name, r.Image, r.Harness, r.Profile, r.Command, r.Ports, r.Kubernetes
			s.Env = r.Env
			if len(r.Secrets) > 0 {
				s.Secrets = map[string]string{}
				for _, n := range r.Secrets {
					s.Secrets[n] = "v"
				}
			}
			before := rt.Calls("Create")
			err := hub.call(wire.MethodAgentCreate, s, nil)
			switch {
			case tc.OK && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.OK && !api.IsCode(err, api.CodeInvalidRequest):
				t.Fatalf("got %v, want invalid_request", err)
			case !tc.OK && rt.Calls("Create") != before:
				t.Fatal("a refused create reached the runtime")
			}
		})
	}
}
