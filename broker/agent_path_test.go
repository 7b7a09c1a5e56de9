package broker

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// named is a runtime answering to another name.
type named struct {
	runtime.Runtime
	name string
}

func (n named) Name() string { return n.name }

// TestAgentEnvPath: the broker's host PATH and directory go only to agents
// on its host; Docker and Kubernetes agents get no PATH from the broker
// (their runtime gives them the image's with the binary's directory),
// and a PATH the spec names passes through to them unchanged.
func TestAgentEnvPath(t *testing.T) {
	t.Setenv("PATH", "/home/op/.secret-tools/bin:/usr/bin")
	const bin = "/opt/scion-broker/bin/scion"
	for _, tc := range []struct {
		runtime, specPath, want string
	}{
		{"process", "", "/opt/scion-broker/bin:/home/op/.secret-tools/bin:/usr/bin"},
		{"docker", "", ""},
		{"kubernetes", "", ""},
		{"docker", "/opt/tools/bin", "/opt/tools/bin"},
		{"kubernetes", "/opt/tools/bin", "/opt/tools/bin"},
	} {
		b := &Broker{cfg: Config{ScionBinary: bin}, rt: named{fake.New(), tc.runtime}}
		spec := wire.AgentSpec{AgentID: "a1"}
		if tc.specPath != "" {
			spec.Env = map[string]string{"PATH": tc.specPath}
		}
		env := b.agentEnv(spec)
		if got := env["PATH"]; got != tc.want {
			t.Errorf("%s, spec PATH %q: PATH = %q, want %q", tc.runtime, tc.specPath, got, tc.want)
		}
		if tc.runtime != "process" {
			for k, v := range env {
				if strings.Contains(v, "secret-tools") || strings.Contains(v, "/opt/scion-broker") {
					t.Errorf("%s: env %s=%q carries the broker's host path", tc.runtime, k, v)
				}
			}
		}
	}
}
