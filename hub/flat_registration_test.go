package hub_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
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

// TestFlatRegistrationNeedsTheExperiment: with hub.flat_runtime_brokers
// off (the default) a flat instance's registration is refused with 409
// experiment_disabled, in process, by POST /runtime-brokers and by a join,
// and no broker is written (the join token stays good); an incomplete
// target is 400 either way. Once the experiment is on through PUT
// /settings the same registrations succeed, and the records carry the
// target and the limit.
func TestFlatRegistrationNeedsTheExperiment(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		ten := 10
		_, err := e.Hub.RegisterFlatBroker(ctx, "k8s-batch", hub.BootstrapAdminID, false, k8sBatch, &ten)
		apiErr(t, err, http.StatusConflict, api.CodeExperimentDisabled)
		if !strings.Contains(err.Error(), api.ExperimentFlatRuntimeBrokers) {
			t.Fatalf("the refusal should name the experiment to turn on: %v", err)
		}
		_, err = e.Admin.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: "docker", RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetDocker}})
		apiErr(t, err, http.StatusConflict, api.CodeExperimentDisabled)
		jt, err := e.Admin.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Name: "joined"})
		if err != nil {
			t.Fatal(err)
		}
		anon := client.New(e.URL, "")
		_, err = anon.JoinBrokerRequest(ctx, api.RegisterBrokerRequest{JoinToken: jt.Token, RuntimeTarget: &k8sBatch})
		apiErr(t, err, http.StatusConflict, api.CodeExperimentDisabled)
		for _, bad := range []api.RuntimeTarget{{Type: api.RuntimeTargetKubernetes, Context: "c"}, {Type: "podman"}, {Type: api.RuntimeTargetDocker, Namespace: "n"}} {
			_, err = e.Hub.RegisterFlatBroker(ctx, "bad", hub.BootstrapAdminID, false, bad, nil)
			apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		}
		if names := brokerNames(t, e); len(names) != 0 {
			t.Fatalf("refused registrations wrote brokers %v", names)
		}

		setExperiment(t, e, api.ExperimentFlatRuntimeBrokers, true)
		_, err = e.Hub.RegisterFlatBroker(ctx, "bad", hub.BootstrapAdminID, false, api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Namespace: "n"}, nil)
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		minus := -1
		_, err = e.Hub.RegisterFlatBroker(ctx, "bad", hub.BootstrapAdminID, false, k8sBatch, &minus)
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)

		creds, err := e.Hub.RegisterFlatBroker(ctx, "k8s-batch", hub.BootstrapAdminID, false, k8sBatch, &ten)
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Admin.GetBroker(ctx, creds.BrokerID)
		if err != nil {
			t.Fatal(err)
		}
		if b.RuntimeTarget == nil || *b.RuntimeTarget != k8sBatch || b.Settings.MaxAgents == nil || *b.Settings.MaxAgents != 10 || b.EffectiveMaxAgents != 10 {
			t.Fatalf("broker %+v (target %v): want target %v and maxAgents 10", b, b.RuntimeTarget, k8sBatch)
		}
		if _, err := e.Admin.RegisterBroker(ctx, api.RegisterBrokerRequest{Name: "docker", RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetDocker}}); err != nil {
			t.Fatal(err)
		}
		if _, err := anon.JoinBrokerRequest(ctx, api.RegisterBrokerRequest{JoinToken: jt.Token, RuntimeTarget: &k8sBatch}); err != nil {
			t.Fatalf("the join token refused while the experiment was off should still be good: %v", err)
		}
		bs, err := e.Admin.ListAllBrokers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		targets := map[string]string{}
		for _, b := range bs {
			if b.RuntimeTarget == nil {
				t.Fatalf("broker %s lists no runtimeTarget", b.Name)
			}
			targets[b.Name] = b.RuntimeTarget.String()
		}
		want := map[string]string{"k8s-batch": "kubernetes:batch-cluster/agents", "docker": "docker", "joined": "kubernetes:batch-cluster/agents"}
		if len(targets) != len(want) {
			t.Fatalf("brokers %v, want %v", targets, want)
		}
		for n, tg := range want {
			if targets[n] != tg {
				t.Fatalf("brokers %v, want %v", targets, want)
			}
		}
		// A regular broker is unchanged and shows no target.
		reg, err := e.Hub.RegisterBroker(ctx, "plain", hub.BootstrapAdminID, false)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := e.Admin.GetBroker(ctx, reg.BrokerID); err != nil || p.RuntimeTarget != nil {
			t.Fatalf("regular broker: %+v, %v", p, err)
		}
	})
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
