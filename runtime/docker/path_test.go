package docker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// TestAgentPath runs agents on the real engine with the scion binary
// mounted and asks them for their PATH: an image's own PATH with
// /usr/local/bin (the binary's directory) added, the engine's default for
// an image that sets none, a PATH the spec names with the directory
// added; and, with no binary mounted, the image's PATH untouched.
func TestAgentPath(t *testing.T) {
	needEngine(t)
	withPath := testPrefix + "-path:latest"
	err := docker.ScratchImage{
		Tag:        withPath,
		Files:      []docker.ImageFile{{Path: agentPath, Source: agentBin}},
		Entrypoint: []string{agentPath},
		Env:        map[string]string{"PATH": "/opt/tools/bin:/usr/bin"},
	}.Build(testCtx(t), engine)
	if err != nil {
		t.Fatal(err)
	}
	mounted := newBrokerRuntime(t, docker.Options{Client: engine, ScionBinary: agentBin})
	plain := newBrokerRuntime(t, docker.Options{Client: engine})
	for _, tc := range []struct {
		name     string
		rt       *docker.Runtime
		image    string
		specPath string
		want     string
	}{
		{"image path", mounted, withPath, "", "/opt/tools/bin:/usr/bin:/usr/local/bin"},
		{"no image path", mounted, testImage, "", runtime.DefaultPath},
		{"spec path", mounted, withPath, "/srv/bin", "/srv/bin:/usr/local/bin"},
		{"no binary", plain, withPath, "", "/opt/tools/bin:/usr/bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has its own deadline: under a loaded engine the
			// four containers together once took longer than one test's.
			ctx := testCtx(t)
			spec := agentSpec(t, tc.rt, "path-"+strings.ReplaceAll(tc.name, " ", "-"), "getenv", "PATH")
			spec.Image = tc.image
			if tc.specPath != "" {
				spec.Env = map[string]string{"PATH": tc.specPath}
			}
			if _, err := tc.rt.Create(ctx, spec); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tc.rt.Delete(testCtx(t), spec.AgentID) })
			if tc.specPath != "" && spec.Env["PATH"] != tc.specPath {
				t.Errorf("Create changed the caller's spec: PATH %q", spec.Env["PATH"])
			}
			if _, err := tc.rt.Start(ctx, spec.AgentID); err != nil {
				t.Fatal(err)
			}
			wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
				out := logsOf(ctx, tc.rt, spec.AgentID)
				if strings.TrimSpace(out) != tc.want {
					return fmt.Errorf("the agent's PATH %q, want %q", out, tc.want)
				}
				return nil
			})
		})
	}
}
