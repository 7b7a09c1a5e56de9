package docker_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

func TestImageMissing(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)
	spec := agentSpec(t, rt, "noimage", "serve", "x")
	spec.Image = testPrefix + "-missing:latest"
	_, err := rt.Create(ctx, spec)
	var ie *docker.ImageNotAvailableError
	if !errors.As(err, &ie) || ie.Image != spec.Image {
		t.Fatalf("Create with a missing image: %v; want an ImageNotAvailableError", err)
	}
	want := "image " + spec.Image + " is not available on this broker (no registry: build or load it first)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if cs := engineContainers(t, spec.AgentID); len(cs) != 0 {
		t.Fatalf("a failed Create left %d containers", len(cs))
	}
	for _, d := range []string{spec.WorkDir, spec.HomeDir} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed Create left %s behind (%v)", d, err)
		}
	}
	if _, err := rt.Inspect(ctx, spec.AgentID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Inspect after failed Create: %v, want ErrNotFound", err)
	}
}

func TestBadSpecLabels(t *testing.T) {
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	ctx := testCtx(t)
	for label, value := range map[string]string{
		docker.LabelPorts: "http:80", docker.LabelMemory: "lots", docker.LabelCPUs: "-1",
	} {
		spec := agentSpec(t, rt, "badlabel", "serve", "x")
		spec.Labels[label] = value
		if _, err := rt.Create(ctx, spec); err == nil || !strings.Contains(err.Error(), label) {
			t.Errorf("Create with %s=%q: %v; want an error naming the label", label, value, err)
		}
		if cs := engineContainers(t, spec.AgentID); len(cs) != 0 {
			t.Fatalf("a failed Create left %d containers", len(cs))
		}
	}
}

func TestContainerConfig(t *testing.T) {
	port := freePort(t)
	rt := newBrokerRuntime(t, docker.Options{
		Client:      engine,
		ScionBinary: agentBin,
		Resources:   docker.Resources{Memory: 256 << 20, NanoCPUs: 1e9},
	})
	ctx := testCtx(t)
	spec := agentSpec(t, rt, "config", "serve", "cfg-marker", "-listen", ":8080")
	spec.Env = map[string]string{"FOO": "bar baz", "HOME": "/elsewhere"}
	spec.Labels[docker.LabelPorts] = fmt.Sprintf("8080:%d", port)
	spec.Labels[docker.LabelCPUs] = "0.5"
	spec.Labels["custom"] = "yes"
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	waitLog(t, ctx, rt, spec.AgentID, "cfg-marker")

	cs := engineContainers(t, spec.AgentID)
	if len(cs) != 1 {
		t.Fatalf("%d containers", len(cs))
	}
	c, err := engine.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^/scion-config-config-[0-9a-f]-[0-9a-f]{10}$`).MatchString(c.Name) {
		t.Errorf("container name %q, want scion-<slug>-<id prefix>-<hash>", c.Name)
	}
	for _, kv := range []string{"FOO=bar baz", "HOME=/home/agent"} {
		if !slices.Contains(c.Config.Env, kv) {
			t.Errorf("Env %v lacks %s", c.Config.Env, kv)
		}
	}
	if c.Config.WorkingDir != "/workspace" || c.Config.Labels["custom"] != "yes" ||
		c.Config.Labels[runtime.LabelBrokerID] != testPrefix+"-TestContainerConfig" {
		t.Errorf("WorkingDir %q, labels %v", c.Config.WorkingDir, c.Config.Labels)
	}
	if h := c.HostConfig; h.Memory != 256<<20 || h.NanoCPUs != 5e8 || h.Init == nil || !*h.Init {
		t.Errorf("memory %d, nano CPUs %d, init %v; want 256MiB, 0.5 CPU (label), init", h.Memory, h.NanoCPUs, h.Init)
	}
	mounts := map[string]container.MountPoint{}
	for _, m := range c.Mounts {
		mounts[m.Destination] = m
	}
	for dst, want := range map[string]struct {
		src string
		rw  bool
	}{"/workspace": {spec.WorkDir, true}, "/home/agent": {spec.HomeDir, true}, "/usr/local/bin/scion": {agentBin, false}} {
		if m := mounts[dst]; m.Source != want.src || m.RW != want.rw {
			t.Errorf("mount %s = %s rw=%v, want %s rw=%v", dst, m.Source, m.RW, want.src, want.rw)
		}
	}

	// Inside: the scion binary runs, HOME and the working directory are
	// the mounts, an exec sees its own env and directory.
	exec := func(req runtime.ExecRequest) string {
		t.Helper()
		var out bytes.Buffer
		req.Stdout = &out
		if code, err := rt.Exec(ctx, spec.AgentID, req); err != nil || code != 0 {
			t.Fatalf("Exec %v = %d, %v", req.Cmd, code, err)
		}
		return out.String()
	}
	if out := exec(runtime.ExecRequest{Cmd: []string{"/usr/local/bin/scion", "exit", "0", "scion-inside"}}); out != "scion-inside\n" {
		t.Errorf("mounted scion binary printed %q", out)
	}
	if out := exec(runtime.ExecRequest{Cmd: []string{agentPath, "getenv", "HOME", "FOO", "EXTRA"}, Env: map[string]string{"EXTRA": "x"}}); out != "/home/agent\nbar baz\nx\n" {
		t.Errorf("exec environment: %q", out)
	}
	if out := exec(runtime.ExecRequest{Cmd: []string{agentPath, "pwd"}}); out != "/workspace\n" {
		t.Errorf("exec working directory: %q", out)
	}
	if out := exec(runtime.ExecRequest{Cmd: []string{agentPath, "pwd"}, WorkDir: "/tmp"}); out != "/tmp\n" {
		t.Errorf("exec working directory: %q", out)
	}

	// The published port reaches the agent.
	var greeting string
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return fmt.Errorf("the published port does not answer: %w", err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Second))
		greeting, err = bufio.NewReader(conn).ReadString('\n')
		if err != nil {
			return fmt.Errorf("no greeting on the published port: %w", err)
		}
		return nil
	})
	if greeting != "hello cfg-marker\n" {
		t.Errorf("port %d answered %q", port, greeting)
	}
}

func TestBuildScratchImage(t *testing.T) {
	needEngine(t)
	ctx := testCtx(t)
	tag := testPrefix + "-scratch:latest"
	err := docker.BuildScratchImage(ctx, engine, tag, agentBin, map[string][]byte{"/etc/motd": []byte("hi\n")})
	if err != nil {
		t.Fatal(err)
	}
	// (Removed with every test image when the tests end.)
	img, err := engine.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.Config.Entrypoint, []string{"/usr/local/bin/scion"}) || img.Config.Labels[docker.LabelImageBuilder] != "scion" {
		t.Errorf("image entrypoint %v, labels %v", img.Config.Entrypoint, img.Config.Labels)
	}
	// The image runs its entrypoint (here the test agent standing in for
	// scion) with a command, as `docker run IMAGE ARGS` would.
	rt := newBrokerRuntime(t, docker.Options{Client: engine})
	spec := agentSpec(t, rt, "scratch")
	spec.Image, spec.Command = tag, nil
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	id := engineContainers(t, spec.AgentID)[0].ID
	c, err := engine.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != "/usr/local/bin/scion" {
		t.Errorf("container runs %q, want the image's entrypoint", c.Path)
	}
	// An image build with a bad path fails with the builder's reason.
	err = docker.ScratchImage{Tag: testPrefix + "-bad:latest", Files: []docker.ImageFile{{Path: "relative", Data: nil}}}.Build(ctx, engine)
	if err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("build with a relative path: %v", err)
	}
}
