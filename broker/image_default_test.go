package broker

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

// imageRuntime is the fake runtime posing as one that runs images, and
// recording the image each create asks for.
type imageRuntime struct {
	*fake.Runtime
	mu     sync.Mutex
	images map[string]string
}

func (r *imageRuntime) Name() string { return "docker" }

func (r *imageRuntime) Create(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	r.mu.Lock()
	r.images[spec.AgentID] = spec.Image
	r.mu.Unlock()
	return r.Runtime.Create(ctx, spec)
}

// A create with no image on a broker that runs images: with a default
// image (a Docker broker's locally built demo image) the agent runs it;
// without one the create is refused before anything is made, saying how
// to set one. It used to fail in the engine with a bare "no image".
func TestAgentWithoutImage(t *testing.T) {
	if demoImageName != docker.DemoImage {
		t.Fatalf("demoImageName %q != docker.DemoImage %q", demoImageName, docker.DemoImage)
	}
	for _, def := range []string{"", docker.DemoImage} {
		hub := newTestHub(t)
		rt := &imageRuntime{Runtime: fake.New(), images: map[string]string{}}
		b := startBroker(t, hub, rt, func(c *Config) { c.DefaultImage = def })
		waitConnected(t, b)
		s := spec("a1")
		s.Start = true
		err := hub.call(wire.MethodAgentCreate, s, nil)
		if def == "" {
			wantCode(t, err, api.CodeInvalidRequest)
			if !strings.Contains(err.Error(), "scion hub settings set --default-image") || !strings.Contains(err.Error(), "scion image build-demo") {
				t.Errorf("refusal %q does not say how to set an image", err)
			}
			if _, ierr := rt.Inspect(t.Context(), "a1"); ierr == nil {
				t.Error("the refused agent exists")
			}
			if entries, _ := os.ReadDir(b.layout.AgentDir("p1", "a1")); len(entries) > 0 {
				t.Errorf("the refused create left files: %v", entries)
			}
			continue
		}
		if err != nil {
			t.Fatalf("with default image %s: %v", def, err)
		}
		// The image the create names, the harness's, win over the default.
		s2 := spec("a2")
		s2.Image = "team/agent:1"
		if err := hub.call(wire.MethodAgentCreate, s2, nil); err != nil {
			t.Fatal(err)
		}
		if rt.images["a1"] != def || rt.images["a2"] != "team/agent:1" {
			t.Errorf("images = %v; want a1 on the default %s, a2 on its own", rt.images, def)
		}
	}
}
