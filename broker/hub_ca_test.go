package broker

import (
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
)

func TestGiveHubCA(t *testing.T) {
	const ca = "/etc/scion/corp-ca.pem"
	for _, tc := range []struct {
		runtime, ca string
		env         string
		mount       *runtime.Mount
	}{
		{"docker", ca, HubCAPath, &runtime.Mount{Source: ca, Target: HubCAPath, ReadOnly: true}},
		{"fake", ca, HubCAPath, &runtime.Mount{Source: ca, Target: HubCAPath, ReadOnly: true}},
		{"process", ca, ca, nil},
		{"kubernetes", ca, "", nil},
		{"docker", "", "", nil},
	} {
		b := &Broker{cfg: Config{AgentHubCA: tc.ca}, rt: named{name: tc.runtime}}
		rs := runtime.Spec{Env: map[string]string{}}
		b.giveHubCA(&rs)
		if got := rs.Env[api.EnvHubCA]; got != tc.env {
			t.Errorf("%s with CA %q: %s=%q, want %q", tc.runtime, tc.ca, api.EnvHubCA, got, tc.env)
		}
		switch {
		case tc.mount == nil && len(rs.Mounts) > 0:
			t.Errorf("%s with CA %q: mounts %+v, want none", tc.runtime, tc.ca, rs.Mounts)
		case tc.mount != nil && (len(rs.Mounts) != 1 || rs.Mounts[0] != *tc.mount):
			t.Errorf("%s: mounts %+v, want %+v", tc.runtime, rs.Mounts, *tc.mount)
		}
	}
}
