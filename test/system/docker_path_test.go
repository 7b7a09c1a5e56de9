package system

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// TestDockerAgentPath: an agent started through the Hub on a Docker
// broker has its image's PATH with the mounted scion binary's directory
// added, as `docker inspect` shows it, and nothing of the broker's host:
// neither the broker's own directory nor any entry of its PATH that the
// image does not have. (The broker used to put both in every agent.)
func TestDockerAgentPath(t *testing.T) {
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	h := newHost(t, "pathcheck")
	startDockerWorkstation(t, h, cl)
	var a api.Agent
	if err := h.scionJSONCmd(&a, "start", "pathcheck", "--", "scion", "agent-demo", "--stay", "--steps", "0"); err != nil {
		t.Fatal(err)
	}
	cs := agentContainers(t, cl, a.ID)
	if len(cs) != 1 {
		t.Fatalf("agent has %d containers", len(cs))
	}
	var got string
	for _, e := range inspect(t, cl, cs[0].ID).Config.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			got = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	img, err := cl.ImageInspect(ctx, docker.DemoImage)
	if err != nil {
		t.Fatal(err)
	}
	imagePath := runtime.DefaultPath
	for _, e := range img.Config.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			imagePath = v
		}
	}
	if want := runtime.PathWith(imagePath, "/usr/local/bin"); got != want {
		t.Errorf("agent's PATH = %q, want the image's %q with /usr/local/bin: %q", got, imagePath, want)
	}
	image := strings.Split(imagePath, ":")
	host := append([]string{filepath.Dir(scionBin)}, filepath.SplitList(os.Getenv("PATH"))...)
	var leaked []string
	for _, e := range strings.Split(got, ":") {
		if slices.Contains(host, e) && !slices.Contains(image, e) && e != "/usr/local/bin" {
			leaked = append(leaked, e)
		}
	}
	if len(leaked) > 0 {
		t.Errorf("agent's PATH holds the broker host's %v", leaked)
	}
	h.mustScion(t, "delete", "pathcheck")
}
