// Command docker measures what the docker runtime adds to starting a
// container: the time from asking to a running container through
// runtime/docker (Create + Start, as the broker calls them) against plain
// Engine API ContainerCreate + ContainerStart of the same image and
// command, side by side, interleaved so that both see the same machine.
//
//	go run ./bench/docker              # defaults: -n 50
//
// It needs a Docker Engine (DOCKER_HOST or the default socket). The image
// is built FROM scratch with the docker tests' static agent (compiled here
// with the go tool, unless -agent names a binary) under a unique tag, and
// removed at the end with every container. Three ways are timed:
//
//	runtime        docker.Runtime Create+Start (duplicate check, labels,
//	               mounts, init, then an inspect for the status)
//	engine, same   ContainerCreate+ContainerStart with the same container
//	               and host configuration (mounts, init, open stdin)
//	engine, bare   ContainerCreate+ContainerStart with image and command only
//
// runtime minus "engine, same" is the runtime's own overhead; "engine,
// same" minus "engine, bare" is what the agent configuration costs the
// engine.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
)

const agentPath = "/usr/local/bin/testagent"

func main() {
	n := flag.Int("n", 50, "measured starts per way")
	warm := flag.Int("warmup", 3, "unmeasured starts per way first")
	agent := flag.String("agent", "", "static test agent binary (default: build runtime/docker/internal/testagent)")
	flag.Parse()
	if err := run(*n, *warm, *agent); err != nil {
		log.Fatal(err)
	}
}

func run(n, warm int, agent string) error {
	ctx := context.Background()
	cli, err := docker.NewClient("")
	if err != nil {
		return err
	}
	defer cli.Close()
	var rnd [4]byte
	rand.Read(rnd[:])
	prefix := "scion-bench-" + hex.EncodeToString(rnd[:])
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if agent == "" {
		agent = filepath.Join(dir, "testagent")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", agent, "./runtime/docker/internal/testagent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build test agent (run from the repository root): %v\n%s", err, out)
		}
	}
	tag := prefix + ":latest"
	img := docker.ScratchImage{Tag: tag, Files: []docker.ImageFile{{Path: agentPath, Source: agent}}, Entrypoint: []string{agentPath}}
	if err := img.Build(ctx, cli); err != nil {
		return err
	}
	defer cleanup(cli, prefix, tag)

	rt, err := docker.New(docker.Options{Client: cli, BrokerID: prefix})
	if err != nil {
		return err
	}
	defer rt.Close()

	b := &bench{cli: cli, rt: rt, dir: dir, tag: tag, prefix: prefix}
	ways := []struct {
		name string
		fn   func(ctx context.Context, i int) (time.Duration, error)
	}{
		{"runtime Create+Start", b.viaRuntime},
		{"engine, same config", b.engineSame},
		{"engine, bare", b.engineBare},
	}
	lat := make([][]time.Duration, len(ways))
	for i := 0; i < warm+n; i++ {
		// Rotate the order so that no way always follows the removal of
		// the same other one.
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
	v, _ := cli.ServerVersion(ctx)
	fmt.Printf("create+start to running, %d starts per way, engine %s (API %s, client API %s)\n",
		n, v.Version, v.APIVersion, cli.ClientVersion())
	fmt.Printf("%-24s %9s %9s %9s\n", "", "p50", "p99", "mean")
	st := make([]stats, len(ways))
	for w := range ways {
		st[w] = summarize(lat[w])
		fmt.Printf("%-24s %9v %9v %9v\n", ways[w].name, st[w].p50.Round(10*time.Microsecond),
			st[w].p99.Round(10*time.Microsecond), st[w].mean.Round(10*time.Microsecond))
	}
	fmt.Printf("%-24s %9v %9v %9v\n", "overhead (runtime-same)", (st[0].p50 - st[1].p50).Round(10*time.Microsecond),
		(st[0].p99 - st[1].p99).Round(10*time.Microsecond), (st[0].mean - st[1].mean).Round(10*time.Microsecond))
	return nil
}

type bench struct {
	cli    *client.Client
	rt     *docker.Runtime
	dir    string
	tag    string
	prefix string
}

func (b *bench) spec(i int) runtime.Spec {
	id := fmt.Sprintf("bench-%04d", i)
	return runtime.Spec{
		AgentID: id, RunID: "run-" + id, BrokerID: b.prefix, ProjectID: "bench", Slug: "bench",
		Image:   b.tag,
		Command: []string{agentPath, "serve", id},
		Env:     map[string]string{"SCION_HUB_ENDPOINT": "http://127.0.0.1:1", "SCION_AGENT_ID": id},
		WorkDir: filepath.Join(b.dir, id, "work"),
		HomeDir: filepath.Join(b.dir, id, "home"),
	}
}

func (b *bench) viaRuntime(ctx context.Context, i int) (time.Duration, error) {
	spec := b.spec(i)
	t0 := time.Now()
	if _, err := b.rt.Create(ctx, spec); err != nil {
		return 0, err
	}
	st, err := b.rt.Start(ctx, spec.AgentID)
	d := time.Since(t0)
	if err == nil && st.State != runtime.StateRunning {
		err = fmt.Errorf("state %s after Start", st.State)
	}
	if err != nil {
		return 0, err
	}
	return d, b.rt.Delete(ctx, spec.AgentID)
}

// engineSame mirrors the configuration the runtime gives an agent.
func (b *bench) engineSame(ctx context.Context, i int) (time.Duration, error) {
	spec := b.spec(i)
	for _, d := range []string{spec.WorkDir, spec.HomeDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return 0, err
		}
	}
	init := true
	cfg := &container.Config{
		Image: b.tag, Cmd: spec.Command, Entrypoint: []string{},
		Env:        []string{"HOME=/home/agent", "SCION_AGENT_ID=" + spec.AgentID, "SCION_HUB_ENDPOINT=http://127.0.0.1:1"},
		Labels:     runtime.SpecLabels(spec),
		WorkingDir: "/workspace", OpenStdin: true,
	}
	host := &container.HostConfig{
		Init:  &init,
		Binds: []string{spec.WorkDir + ":/workspace", spec.HomeDir + ":/home/agent"},
	}
	return b.engine(ctx, cfg, host, fmt.Sprintf("%s-same-%d", b.prefix, i))
}

func (b *bench) engineBare(ctx context.Context, i int) (time.Duration, error) {
	spec := b.spec(i)
	cfg := &container.Config{Image: b.tag, Cmd: spec.Command, Entrypoint: []string{}}
	return b.engine(ctx, cfg, &container.HostConfig{}, fmt.Sprintf("%s-bare-%d", b.prefix, i))
}

func (b *bench) engine(ctx context.Context, cfg *container.Config, host *container.HostConfig, name string) (time.Duration, error) {
	t0 := time.Now()
	resp, err := b.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		return 0, err
	}
	err = b.cli.ContainerStart(ctx, resp.ID, container.StartOptions{})
	d := time.Since(t0)
	if rerr := b.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true}); err == nil {
		err = rerr
	}
	return d, err
}

type stats struct{ p50, p99, mean time.Duration }

func summarize(lat []time.Duration) stats {
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	p99 := min(len(lat)-1, (len(lat)*99+99)/100-1)
	return stats{lat[len(lat)/2], lat[p99], sum / time.Duration(len(lat))}
}

// cleanup removes the benchmark's containers (left by an error) and image.
func cleanup(cli *client.Client, prefix, tag string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, _ := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", prefix))})
	for _, c := range cs {
		cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
	cs, _ = cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", runtime.LabelBrokerID+"="+prefix))})
	for _, c := range cs {
		cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	}
	cli.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true})
}
