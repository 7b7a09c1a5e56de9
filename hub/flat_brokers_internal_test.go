package hub

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

func TestHelloTarget(t *testing.T) {
	k8s := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "batch", Namespace: "agents"}
	docker := api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	kube := k8s
	regular, flatRec := &store.Broker{ID: "b1", Name: "name-b1"}, &store.Broker{ID: "f1", Name: "name-f1", RuntimeTarget: &kube}
	// A GKE context: gke_<project>_<zone>_<cluster>.
	longCtx := api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "gke_" + strings.Repeat("p", 30) + "_europe-west1-b_" + strings.Repeat("c", 40), Namespace: strings.Repeat("n", 63)}
	for _, tc := range []struct {
		name   string
		rec    *store.Broker
		hello  wire.Hello
		on     bool
		want   *api.RuntimeTarget
		code   string
		status int
	}{
		{"regular hello, regular record", regular, wire.Hello{Profiles: []wire.Profile{{Name: "p"}}}, false, nil, "", 0},
		{"first flat hello, experiment on", regular, wire.Hello{RuntimeTarget: &k8s}, true, &k8s, "", 0},
		{"first flat hello, experiment off", regular, wire.Hello{RuntimeTarget: &k8s}, false, nil, api.CodeExperimentDisabled, http.StatusConflict},
		{"a recorded flat broker's hello, experiment off since", flatRec, wire.Hello{RuntimeTarget: &k8s}, false, &k8s, "", 0},
		{"a recorded flat broker now serving another target", flatRec, wire.Hello{RuntimeTarget: &docker}, false, &docker, "", 0},
		{"a recorded flat broker's hello without a target clears it", flatRec, wire.Hello{}, false, nil, "", 0},
		{"target and profiles", regular, wire.Hello{RuntimeTarget: &k8s, Profiles: []wire.Profile{{Name: "p"}}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"target and profiles on a flat record", flatRec, wire.Hello{RuntimeTarget: &k8s, Profiles: []wire.Profile{{Name: "p"}}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"incomplete target", flatRec, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "c"}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"unknown target type", regular, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: "podman"}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"a context holding an escape sequence", flatRec, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "c\x1b[2J", Namespace: "agents"}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"a namespace holding a newline", flatRec, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "c", Namespace: "agents\nforged log line"}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"a huge context", flatRec, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: strings.Repeat("c", 1<<20), Namespace: "agents"}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"a huge namespace", regular, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: "c", Namespace: strings.Repeat("n", 300)}}, true, nil, api.CodeInvalidRequest, http.StatusBadRequest},
		{"a long real context", regular, wire.Hello{RuntimeTarget: &longCtx}, true, &longCtx, "", 0},
		{"an incomplete target is 400 before the experiment's 409", regular, wire.Hello{RuntimeTarget: &api.RuntimeTarget{Type: "podman"}}, false, nil, api.CodeInvalidRequest, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := helloTarget(tc.rec, &tc.hello, tc.on)
			if e := api.AsError(err); (tc.code == "") != (err == nil) || (e != nil && (e.Code != tc.code || e.Status != tc.status)) {
				t.Fatalf("error %v, want %d %s", err, tc.status, tc.code)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("target %v, want %v", got, tc.want)
			}
			if got != nil && got == tc.hello.RuntimeTarget {
				t.Fatal("the recorded target shares the hello's")
			}
		})
	}
}
