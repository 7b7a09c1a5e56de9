package hub_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
)

var k8sBatch = api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch-cluster", Namespace: "agents"}

// setExperiment turns a Hub experiment on or off through PUT /settings,
// keeping the rest of the settings (PUT replaces the whole document).
func setExperiment(t *testing.T, e *testenv.Env, name string, on bool) {
	t.Helper()
	ctx := context.Background()
	s, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Experiments == nil {
		s.Experiments = map[string]bool{}
	}
	s.Experiments[name] = on
	if _, err := e.Admin.PutSettings(ctx, *s); err != nil {
		t.Fatal(err)
	}
}

// brokerNames lists the registered brokers' names.
func brokerNames(t *testing.T, e *testenv.Env) []string {
	t.Helper()
	bs, err := e.Admin.ListAllBrokers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range bs {
		names = append(names, b.Name)
	}
	return names
}

// TestFlatExperimentSettings: GET /settings names every known experiment
// (off by default), PUT turns one on, an unknown name is refused with 400
// naming the known ones and changes nothing, and the setting survives a
// Hub restart (it is stored, not only cached).
func TestFlatExperimentSettings(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		s, err := e.Admin.GetSettings(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range api.Experiments {
			if on, ok := s.Experiments[name]; !ok || on {
				t.Fatalf("experiments %v: want every known one listed, off", s.Experiments)
			}
		}
		s.AgentDefaults.DefaultImage = "img:1"
		s.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true, "hub.flat_runtime_broker": true}
		_, err = e.Admin.PutSettings(ctx, *s)
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		if !strings.Contains(err.Error(), `"hub.flat_runtime_broker"`) || !strings.Contains(err.Error(), api.ExperimentList()) {
			t.Fatalf("the refusal should name the unknown experiment and the known ones: %v", err)
		}
		if got, _ := e.Admin.GetSettings(ctx); got.Experiments[api.ExperimentFlatRuntimeBrokers] || got.AgentDefaults.DefaultImage != "" {
			t.Fatalf("a refused PUT changed the settings: %+v", got)
		}
		delete(s.Experiments, "hub.flat_runtime_broker")
		put, err := e.Admin.PutSettings(ctx, *s)
		if err != nil {
			t.Fatal(err)
		}
		if !put.Experiments[api.ExperimentFlatRuntimeBrokers] || put.Experiments[api.ExperimentK8sNFSHome] || put.AgentDefaults.DefaultImage != "img:1" {
			t.Fatalf("PUT answered %+v", put)
		}
		e.RestartHub()
		got, err := e.Admin.GetSettings(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Experiments[api.ExperimentFlatRuntimeBrokers] || got.AgentDefaults.DefaultImage != "img:1" {
			t.Fatalf("after a restart: %+v", got)
		}
		if _, err := e.Hub.RegisterFlatBroker(ctx, "docker", hub.BootstrapAdminID, false, api.RuntimeTarget{Type: api.RuntimeTargetDocker}, nil); err != nil {
			t.Fatalf("the experiment is on after the restart: %v", err)
		}
		if names := brokerNames(t, e); !slices.Equal(names, []string{"docker"}) {
			t.Fatalf("brokers %v", names)
		}
	})
}
