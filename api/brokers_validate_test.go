package api_test

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

// TestRegisterBrokerRequestValidate: the name (when given), the join
// token's bound and a flat instance's complete target.
func TestRegisterBrokerRequestValidate(t *testing.T) {
	k8s := func(ctx, ns string) *api.RuntimeTarget {
		return &api.RuntimeTarget{Type: api.RuntimeTargetKubernetes, Context: ctx, Namespace: ns}
	}
	for _, tc := range []struct {
		name string
		r    api.RegisterBrokerRequest
		ok   bool
	}{
		{"plain", api.RegisterBrokerRequest{Name: "gpu"}, true},
		{"join named by its token", api.RegisterBrokerRequest{JoinToken: "scj_x"}, true},
		{"docker target", api.RegisterBrokerRequest{Name: "d", RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetDocker}}, true},
		{"kubernetes target", api.RegisterBrokerRequest{Name: "k", RuntimeTarget: k8s("prod", "agents")}, true},
		{"name upper case", api.RegisterBrokerRequest{Name: "GPU"}, false},
		{"token of 257", api.RegisterBrokerRequest{JoinToken: strings.Repeat("t", 257)}, false},
		{"kubernetes target without a namespace", api.RegisterBrokerRequest{Name: "k", RuntimeTarget: k8s("prod", "")}, false},
		{"namespace of 64", api.RegisterBrokerRequest{Name: "k", RuntimeTarget: k8s("prod", strings.Repeat("n", 64))}, false},
		{"context with a newline", api.RegisterBrokerRequest{Name: "k", RuntimeTarget: k8s("a\nb", "agents")}, false},
		{"docker target with a namespace", api.RegisterBrokerRequest{Name: "d", RuntimeTarget: &api.RuntimeTarget{Type: api.RuntimeTargetDocker, Namespace: "x"}}, false},
		{"unknown target type", api.RegisterBrokerRequest{Name: "d", RuntimeTarget: &api.RuntimeTarget{Type: "podman"}}, false},
	} {
		err := tc.r.Validate()
		if (err == nil) != tc.ok || (err != nil && !api.IsCode(err, api.CodeInvalidRequest)) {
			t.Errorf("%s: Validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
