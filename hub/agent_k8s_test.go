package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestAgentKubernetesSettingsValidated: an agent's own Kubernetes settings
// are taken when well-formed and refused (nothing created) otherwise.
func TestAgentKubernetesSettingsValidated(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "k", Project: "default", Command: []string{"x"},
		Kubernetes: map[string]string{"namespace": "team-a", "shared_dir_size": "40Gi"}}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "bad", Project: "default", Command: []string{"x"},
		Kubernetes: map[string]string{"Name Space": "x"}})
	apiErr(t, err, 400, api.CodeInvalidRequest)
	if _, err := e.Admin.GetAgent(ctx, "bad", "default"); err == nil {
		t.Fatal("a refused create left an agent")
	}
}
