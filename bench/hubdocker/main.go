// Command hubdocker measures agent start through the Hub on the real Docker
// Engine against a plain Engine API create+start of the same image and
// command, side by side in one run.
//
//	go run ./bench/hubdocker            # defaults: -n 30
//
// It builds bin/scion (static) into a temporary directory, unless -scion
// names one, and starts `scion server start --workstation --runtime docker`
// as a separate process on a free loopback port, with its own SCION_HOME:
// a Hub and its local Runtime Broker, SQLite, the docker runtime, agents on
// the host network. scion-demo:latest is built if it is missing (and then
// removed at the end). Four ways are timed, interleaved and rotated so
// that each sees the same machine:
//
//	hub              POST /api/v1/agents {start: true}, command
//	                 `scion agent-demo --stay --steps 0`, timed from the call
//	                 to its 201 answering phase running (the engine is then
//	                 asked, untimed, that the container runs). Auth,
//	                 placement, two SQLite commits, the control channel to
//	                 the broker, the agent's directories, and the runtime's
//	                 Create+Start.
//	plain, host net  ContainerCreate + ContainerStart of the same image and
//	                 command on the host network, which the workstation's
//	                 agents use (its Hub is on loopback): the baseline.
//	plain, bridge    the same on the engine's default bridge network, which
//	                 costs the engine a network namespace per container.
//	agent config     the same two calls with the whole configuration the
//	                 runtime gives an agent (binds for workspace, home and
//	                 the scion binary, init, host network, open stdin, env,
//	                 labels), so that hub minus this is what Scion itself
//	                 adds on top of the engine's own work.
//
// Every agent is deleted through the Hub and every plain container removed
// after it is measured; at the end the workstation is stopped and whatever
// it or this program left on the engine is removed.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	dclient "github.com/docker/docker/client"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

// agentCommand is what every measured container runs.
var agentCommand = []string{"scion", "agent-demo", "--stay", "--steps", "0"}

func main() {
	n := flag.Int("n", 30, "measured starts per way")
	warm := flag.Int("warmup", 3, "unmeasured starts per way first")
	scionBin := flag.String("scion", "", "static scion binary (default: build ./cmd/scion with CGO_ENABLED=0)")
	flag.Parse()
	if err := run(*n, *warm, *scionBin); err != nil {
		log.Fatal(err)
	}
}

type bench struct {
	eng      *dclient.Client
	hub      *client.Client
	scion    string // host path of the static scion binary
	dir      string
	prefix   string
	brokerID string
}

func run(n, warm int, scionBin string) (err error) {
	ctx := context.Background()
	eng, err := docker.NewClient("")
	if err != nil {
		return err
	}
	defer eng.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = eng.Ping(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("no Docker Engine answers at %s: %w", eng.DaemonHost(), err)
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	prefix := "scion-hubbench-" + hex.EncodeToString(rnd[:])
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if scionBin == "" {
		scionBin = filepath.Join(dir, "scion")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-o", scionBin, "./cmd/scion")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build scion (run from the repository root): %v\n%s", err, out)
		}
	}
	if scionBin, err = filepath.Abs(scionBin); err != nil {
		return err
	}

	// The demo image: reused if present (it may be someone else's),
	// otherwise built here and removed at the end.
	if _, err := eng.ImageInspect(ctx, docker.DemoImage); cerrdefs.IsNotFound(err) {
		if _, err := docker.BuildDemoImage(ctx, eng, scionBin); err != nil {
			return err
		}
		defer func() {
			if _, rerr := eng.ImageRemove(context.Background(), docker.DemoImage, image.RemoveOptions{PruneChildren: true}); rerr != nil {
				log.Printf("leaving %s: %v", docker.DemoImage, rerr)
			}
		}()
	} else if err != nil {
		return err
	}

	b := &bench{eng: eng, scion: scionBin, dir: dir, prefix: prefix}
	stop, err := b.startWorkstation(ctx)
	defer b.cleanup(stop)
	if err != nil {
		return err
	}

	ways := []struct {
		name string
		fn   func(ctx context.Context, i int) (time.Duration, error)
	}{
		{"hub (API to running)", b.viaHub},
		{"engine, plain, host net", b.enginePlainHost},
		{"engine, plain, bridge", b.enginePlain},
		{"engine, agent config", b.engineAgent},
	}
	lat := make([][]time.Duration, len(ways))
	for i := 0; i < warm+n; i++ {
		for k := range ways {
			w := (i + k) % len(ways)
			d, err := ways[w].fn(ctx, i*len(ways)+w)
			if err != nil {
				return fmt.Errorf("%s: %w", ways[w].name, err)
			}
			if i >= warm {
				lat[w] = append(lat[w], d)
			}
		}
	}

	v, _ := eng.ServerVersion(ctx)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("agent start to running container, %d starts per way (after %d warm-up), engine %s (API %s), load %s\n",
		n, warm, v.Version, v.APIVersion, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("%-26s %9s %9s %9s %9s\n", "", "p50", "p99", "mean", "max")
	st := make([]stats, len(ways))
	for w := range ways {
		st[w] = summarize(lat[w])
		fmt.Printf("%-26s %9v %9v %9v %9v\n", ways[w].name, rnd3(st[w].p50), rnd3(st[w].p99), rnd3(st[w].mean), rnd3(st[w].max))
	}
	over := func(a, b stats) string {
		return fmt.Sprintf("%9v %9v %9v", rnd3(a.p50-b.p50), rnd3(a.p99-b.p99), rnd3(a.mean-b.mean))
	}
	fmt.Printf("%-26s %s\n", "overhead vs plain, host", over(st[0], st[1]))
	fmt.Printf("%-26s %s\n", "overhead vs plain, bridge", over(st[0], st[2]))
	fmt.Printf("%-26s %s\n", "overhead vs agent config", over(st[0], st[3]))
	verdict := "met"
	if st[0].p50-st[1].p50 > 50*time.Millisecond { // like for like: host network
		verdict = "NOT met"
	}
	fmt.Printf("target: overhead at most 50ms at p50 (vs plain, host network): %s\n", verdict)
	return nil
}

// startWorkstation runs `scion server start --workstation --runtime
// docker` and waits until its broker is online. stop ends it.
func (b *bench) startWorkstation(ctx context.Context) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return func() {}, err
	}
	addr := ln.Addr().String()
	ln.Close()
	home, user := filepath.Join(b.dir, "home"), filepath.Join(b.dir, "user")
	for _, d := range []string{home, user} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return func() {}, err
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "SCION_") && k != "HOME" {
			env = append(env, kv)
		}
	}
	logf, err := os.Create(filepath.Join(b.dir, "hub.log"))
	if err != nil {
		return func() {}, err
	}
	defer logf.Close()
	cmd := exec.Command(b.scion, "server", "start", "--workstation", "--runtime", "docker", "--listen", addr, "--log-level", "warn")
	cmd.Env = append(env, "SCION_HOME="+home, "HOME="+user)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return func() {}, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	fail := func(err error) (func(), error) {
		hubLog, _ := os.ReadFile(logf.Name())
		return stop, fmt.Errorf("%w; workstation log:\n%s", err, hubLog)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-exited:
			return fail(errors.New("the workstation exited"))
		default:
		}
		if time.Now().After(deadline) {
			return fail(errors.New("the workstation's broker was not online within 60s"))
		}
		time.Sleep(50 * time.Millisecond)
		var ws struct {
			URL        string `json:"url"`
			AdminToken string `json:"adminToken"`
			BrokerID   string `json:"brokerId"`
			PID        int    `json:"pid"`
		}
		data, err := os.ReadFile(filepath.Join(home, "workstation.json"))
		if err != nil || json.Unmarshal(data, &ws) != nil || ws.PID != cmd.Process.Pid {
			continue
		}
		b.brokerID = ws.BrokerID
		b.hub = client.New(ws.URL, ws.AdminToken)
		br, err := b.hub.GetBroker(ctx, ws.BrokerID)
		if err == nil && br.Status == api.BrokerOnline {
			return stop, nil
		}
	}
}

func (b *bench) viaHub(ctx context.Context, i int) (time.Duration, error) {
	name := fmt.Sprintf("bench-%04d", i)
	t0 := time.Now()
	a, err := b.hub.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Start: true,
		Image: docker.DemoImage, Command: agentCommand})
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if a.Phase != api.PhaseRunning || a.ContainerStatus != api.ContainerRunning {
		return 0, fmt.Errorf("agent %s: phase %s, container %s (%s)", name, a.Phase, a.ContainerStatus, a.StatusMessage)
	}
	cs, err := b.eng.ContainerList(ctx, dcontainer.ListOptions{Filters: filters.NewArgs(filters.Arg("label", runtime.LabelAgentID+"="+a.ID))})
	if err != nil {
		return 0, err
	}
	if len(cs) != 1 || cs[0].State != "running" {
		return 0, fmt.Errorf("agent %s: the engine has %d running containers for it, want 1", name, len(cs))
	}
	return d, b.hub.DeleteAgent(ctx, name, "default")
}

// enginePlainHost is the baseline: the same image and command on the
// network the workstation's agents use (the host's: its Hub listens on
// loopback), and nothing else.
func (b *bench) enginePlainHost(ctx context.Context, i int) (time.Duration, error) {
	cfg := &dcontainer.Config{Image: docker.DemoImage, Cmd: agentCommand, Entrypoint: []string{}}
	return b.engine(ctx, cfg, &dcontainer.HostConfig{NetworkMode: "host"}, fmt.Sprintf("%s-host-%d", b.prefix, i))
}

// enginePlain is the same on the engine's default bridge network, which
// costs the engine a network namespace and a veth pair per container.
func (b *bench) enginePlain(ctx context.Context, i int) (time.Duration, error) {
	cfg := &dcontainer.Config{Image: docker.DemoImage, Cmd: agentCommand, Entrypoint: []string{}}
	return b.engine(ctx, cfg, &dcontainer.HostConfig{}, fmt.Sprintf("%s-plain-%d", b.prefix, i))
}

// engineAgent mirrors the configuration runtime/docker gives an agent of
// the workstation (see containerConfig in runtime/docker/create.go).
func (b *bench) engineAgent(ctx context.Context, i int) (time.Duration, error) {
	id := fmt.Sprintf("%s-agent-%d", b.prefix, i)
	work, home := filepath.Join(b.dir, "agents", id, "workspace"), filepath.Join(b.dir, "agents", id, "home")
	t0 := time.Now()
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return 0, err
		}
	}
	init := true
	cfg := &dcontainer.Config{
		Image: docker.DemoImage, Cmd: agentCommand, Entrypoint: []string{},
		Env: []string{"HOME=" + docker.HomePath, "PATH=/usr/local/bin:/usr/bin:/bin", api.EnvAgentID + "=" + id,
			api.EnvHubEndpoint + "=http://127.0.0.1:1", api.EnvAgentToken + "=x", api.EnvProject + "=default"},
		Labels:     map[string]string{runtime.LabelBrokerID: b.prefix, runtime.LabelAgentID: id, runtime.LabelSlug: id},
		WorkingDir: docker.WorkspacePath, OpenStdin: true,
	}
	host := &dcontainer.HostConfig{
		NetworkMode: "host",
		Init:        &init,
		Binds: []string{work + ":" + docker.WorkspacePath, home + ":" + docker.HomePath,
			b.scion + ":" + docker.ScionBinaryPath + ":ro"},
	}
	return b.engineFrom(ctx, t0, cfg, host, id)
}

func (b *bench) engine(ctx context.Context, cfg *dcontainer.Config, host *dcontainer.HostConfig, name string) (time.Duration, error) {
	return b.engineFrom(ctx, time.Now(), cfg, host, name)
}

func (b *bench) engineFrom(ctx context.Context, t0 time.Time, cfg *dcontainer.Config, host *dcontainer.HostConfig, name string) (time.Duration, error) {
	resp, err := b.eng.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		return 0, err
	}
	err = b.eng.ContainerStart(ctx, resp.ID, dcontainer.StartOptions{})
	d := time.Since(t0)
	if rerr := b.eng.ContainerRemove(ctx, resp.ID, dcontainer.RemoveOptions{Force: true}); err == nil {
		err = rerr
	}
	return d, err
}

// cleanup deletes the agents still on the Hub, stops the workstation and
// removes whatever containers of this run are left on the engine.
func (b *bench) cleanup(stopHub func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if b.hub != nil {
		if as, err := b.hub.ListAllAgents(ctx, client.AgentFilter{}); err == nil {
			for _, a := range as {
				b.hub.DeleteAgent(ctx, a.ID, "")
			}
		}
	}
	stopHub()
	var cs []dcontainer.Summary
	for _, f := range []filters.KeyValuePair{filters.Arg("name", b.prefix), filters.Arg("label", runtime.LabelBrokerID+"="+b.prefix)} {
		found, _ := b.eng.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: filters.NewArgs(f)})
		cs = append(cs, found...)
	}
	if b.brokerID != "" {
		found, _ := b.eng.ContainerList(ctx, dcontainer.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", runtime.LabelBrokerID+"="+b.brokerID))})
		cs = append(cs, found...)
	}
	for _, c := range cs {
		b.eng.ContainerRemove(ctx, c.ID, dcontainer.RemoveOptions{Force: true})
	}
}

type stats struct{ p50, p99, mean, max time.Duration }

func summarize(lat []time.Duration) stats {
	lat = slices.Clone(lat)
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	// p99 is the nearest rank: with fewer than 100 samples, the maximum.
	p99 := min(len(lat)-1, (len(lat)*99+99)/100-1)
	return stats{lat[len(lat)/2], lat[p99], sum / time.Duration(len(lat)), lat[len(lat)-1]}
}

// rnd3 rounds to three significant digits' worth for a readable table.
func rnd3(d time.Duration) time.Duration {
	switch a := max(d, -d); {
	case a >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case a >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	default:
		return d.Round(10 * time.Microsecond)
	}
}
