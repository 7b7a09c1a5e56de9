package docker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// The package's tests run against the real engine of this machine. The
// test agent (internal/testagent) is compiled static and put in a scratch
// image under a unique tag; both go when the tests end.
var (
	engine     *client.Client
	engineErr  error // the engine does not answer: skip, or fail under CI=true
	setupErr   error // the engine answers but the fixture failed: fail
	testImage  string
	agentBin   string // the test agent binary on the host
	testPrefix string // unique per run: broker IDs, tags
)

// agentPath is where the test image has the test agent.
const agentPath = "/usr/local/bin/testagent"

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	var b [4]byte
	rand.Read(b[:])
	testPrefix = "dockertest-" + hex.EncodeToString(b[:])
	engine, engineErr = docker.NewClient("")
	if engineErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, engineErr = engine.Ping(ctx)
		cancel()
	}
	if engineErr != nil {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "scion-dockertest")
	if err != nil {
		setupErr = err
		return m.Run()
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if setupErr = buildAgent(ctx, dir); setupErr == nil {
		testImage = testPrefix + ":latest"
		setupErr = docker.ScratchImage{
			Tag:        testImage,
			Files:      []docker.ImageFile{{Path: agentPath, Source: agentBin}},
			Entrypoint: []string{agentPath},
		}.Build(ctx, engine)
	}
	code := m.Run()
	cleanupEngine()
	return code
}

// buildAgent compiles the test agent static into dir.
func buildAgent(ctx context.Context, dir string) error {
	agentBin = filepath.Join(dir, "testagent")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", agentBin, "./internal/testagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build test agent: %v\n%s", err, out)
	}
	return nil
}

// cleanupEngine removes whatever this run left on the engine: containers
// of its brokers (tests clean up after themselves; this catches a crash)
// and the test images.
func cleanupEngine() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, _ := engine.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", runtime.LabelBrokerID))})
	for _, c := range cs {
		if b := c.Labels[runtime.LabelBrokerID]; strings.HasPrefix(b, testPrefix) {
			engine.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		}
	}
	imgs, _ := engine.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", testPrefix+"*"))})
	for _, img := range imgs {
		engine.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
	}
}

// needEngine skips t when there is no engine (fails it under CI=true, where
// a missing real part must not pass unnoticed) and fails it when the
// fixture could not be built.
func needEngine(t testing.TB) {
	t.Helper()
	if engineErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: no Docker Engine answers: %v", engineErr)
		}
		t.Skipf("no Docker Engine answers (set DOCKER_HOST, or start dockerd): %v", engineErr)
	}
	if setupErr != nil {
		t.Fatalf("test fixture: %v", setupErr)
	}
}

// newBrokerRuntime returns a runtime for a fresh broker ID, with a
// cleanup that closes it and removes the broker's containers through a
// second runtime (the first may be closed by then).
func newBrokerRuntime(t testing.TB, opts docker.Options) *docker.Runtime {
	t.Helper()
	needEngine(t)
	if opts.BrokerID == "" {
		opts.BrokerID = fmt.Sprintf("%s-%s", testPrefix, sanitizeName(t.Name()))
	}
	rt, err := docker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		removeBroker(t, opts.BrokerID)
	})
	return rt
}

// removeBroker deletes every container of brokerID.
func removeBroker(t testing.TB, brokerID string) {
	rt, err := docker.New(docker.Options{BrokerID: brokerID, Client: engine})
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := rt.Inventory(ctx)
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
	for _, st := range inv {
		if err := rt.Delete(ctx, st.AgentID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("cleanup: %v", err)
		}
	}
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}

// agentSpec is a spec for the test image running the test agent with args.
func agentSpec(t testing.TB, rt *docker.Runtime, name string, args ...string) runtime.Spec {
	base := t.TempDir()
	id := fmt.Sprintf("%s-%s", name, strings.TrimPrefix(testPrefix, "dockertest-"))
	return runtime.Spec{
		AgentID:   id,
		RunID:     "run-" + id,
		ProjectID: "project-dockertest",
		Slug:      name,
		Image:     testImage,
		Command:   append([]string{agentPath}, args...),
		WorkDir:   filepath.Join(base, "work"),
		HomeDir:   filepath.Join(base, "home"),
		Labels:    map[string]string{},
	}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
