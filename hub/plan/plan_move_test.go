package plan

import (
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

func TestMoveTargetCheck(t *testing.T) {
	pin := &api.PinnedRuntimeTarget{BrokerID: "f1", RuntimeTarget: tKube}
	regular, flatB := tBroker("b2"), tBroker("f2", flat(tDocker))
	for _, tc := range []struct {
		name   string
		agent  *store.Agent
		target *store.Broker
		code   string
	}{
		{"regular agent to a regular broker", &store.Agent{Slug: "a", BrokerID: "b1"}, regular, ""},
		{"regular agent onto a flat broker", &store.Agent{Slug: "a", BrokerID: "b1"}, flatB, api.CodeTargetMoveUnsupported},
		{"pinned agent to a regular broker", &store.Agent{Slug: "a", BrokerID: "f1", Pin: pin}, regular, api.CodeTargetMoveUnsupported},
		{"pinned agent to another flat broker", &store.Agent{Slug: "a", BrokerID: "f1", Pin: pin}, flatB, api.CodeTargetMoveUnsupported},
		{"pinned agent to another flat broker serving its target", &store.Agent{Slug: "a", BrokerID: "f1", Pin: pin}, tBroker("f3", flat(tKube)), api.CodeTargetMoveUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 0
			if tc.code != "" {
				status = http.StatusConflict
			}
			wantErr(t, moveTargetCheck(tc.agent, tc.target), tc.code, status)
		})
	}
}
