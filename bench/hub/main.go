// Command hub measures agent-create throughput through the Hub's REST API:
// each create is placed, committed with its capacity reservation,
// dispatched over the control channel to a broker with the fake runtime,
// acknowledged, committed again, and answered. It runs concurrency 1, 8
// and 32 on SQLite and on PostgreSQL (when SCION_TEST_POSTGRES_URL is set)
// and prints throughput and latency percentiles.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/postgres"
	"github.com/scion-go/scion/store/sqlite"
)

func main() {
	n := flag.Int("n", 2000, "creates per concurrency level")
	levels := flag.String("c", "1,8,32", "concurrency levels")
	engines := flag.String("engines", "sqlite,postgres", "stores to measure")
	shapes := flag.String("shape", "process,inproc", "process: Hub and broker as separate scion processes (SCION_BIN, else built), this one the HTTP client; inproc: all three in this process; both: side by side, alternated per level")
	runs := flag.Int("runs", 1, "measure every level and shape this many times (alternated) and print the medians")
	profileDir := flag.String("profile", "", "process shape: write a CPU profile of the Hub and of the broker process at the last level into this directory (hub-ENGINE.pprof, broker-ENGINE.pprof)")
	fleet := flag.Bool("fleet", false, "instead: 50 brokers with 5,000 agents placed vs an empty Hub, at -c's last level (in process)")
	flag.BoolVar(&movesMode, "moves", false, "instead: a move's dry run (reincarnate --broker --dry-run --force) through the API on 50 brokers with 5,000 agents placed, at -c's last level (in process)")
	flat := flag.Bool("flat", false, "instead: a flat Runtime Broker vs a regular one (in process, ABBA), at -c's last level: n creates with start, then a stop and a start of each")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process's whole run here")
	flag.StringVar(&flatOrder, "order", "regular,flat,flat,regular", "with -flat: the brokers to measure, in order (one variant alone, with -cpuprofile, profiles it)")
	flag.StringVar(&fleetShapes, "shapes", "empty,fleet,fleet,empty", "with -fleet: the Hubs to measure, in order; a shape measured twice is averaged")
	flag.Parse()
	os.Exit(benchMain(*n, *levels, *engines, *shapes, *runs, *profileDir, *fleet, *flat, *cpuprofile))
}

// interrupted is set when the bench got a signal.
var interrupted atomic.Bool

// benchMain runs the bench and returns the exit code; whatever it started
// (daemon processes, directories) is gone when it returns, and when the
// bench is interrupted.
func benchMain(n int, levels, engines, shapes string, runs int, profileDir string, fleet, flat bool, cpuprofile string) int {
	// On a signal the daemons are killed at once, which fails the level
	// under way; the run then returns through the removals below. A bench
	// stuck elsewhere (a build) is given 10 s before it is ended here.
	done := make(chan struct{})
	defer close(done)
	defer removeAll()
	defer killDaemons()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			interrupted.Store(true)
			fmt.Fprintf(os.Stderr, "%v: stopping the daemons and removing the bench's data\n", s)
			killDaemons()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				removeAll()
			}
			os.Exit(1)
		case <-done:
		}
	}()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if profileDir != "" {
		abs, err := filepath.Abs(profileDir)
		if err == nil {
			err = os.MkdirAll(abs, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		profileDir = abs
	}
	fsBaseline("before")
	defer func() {
		if !interrupted.Load() {
			fsBaseline("after")
		}
	}()
	if fleet {
		runFleet(engines, levels, n)
		return 0
	}
	if movesMode {
		return runMoves(engines, levels, n)
	}
	if flat {
		return runFlat(engines, levels, n)
	}
	if strings.Contains(shapes, "process") {
		if _, err := scionBinary(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Printf("agent create through the Hub API (fake runtime, 1 broker), %d creates per level, %d run(s)\n", n, runs)
	fmt.Printf("process: Hub and broker are scion processes (%s), this process the HTTP client; inproc: all in this process\n", scionBinPath)
	fmt.Printf("cpu: utime+stime per measured create of the Hub process, the broker process and this process (the client; inproc: all three)\n")
	fmt.Printf("%-9s %-8s %5s %10s %9s %9s %9s %9s %10s %10s  %s\n", "engine", "shape", "conc", "creates/s", "p50", "p99", "max", "hub cpu", "broker cpu", "client cpu", "loadavg")
	ls := strings.Split(levels, ",")
	all := map[string][]result{} // engine/shape/conc
	for _, eng := range strings.Split(engines, ",") {
	runs:
		for r := range runs {
			for li, cs := range ls {
				c, _ := strconv.Atoi(cs)
				shs := strings.Split(shapes, ",")
				if r%2 == 1 { // alternate which shape goes first
					for i, j := 0, len(shs)-1; i < j; i, j = i+1, j-1 {
						shs[i], shs[j] = shs[j], shs[i]
					}
				}
				for _, sh := range shs {
					var res result
					var err error
					switch sh {
					case "process":
						prof := ""
						if li == len(ls)-1 && r == 0 {
							prof = profileDir
						}
						res, err = runProcess(eng, c, n, prof)
					case "inproc":
						res, err = run(eng, c, n, 1, 0)
					default:
						err = fmt.Errorf("unknown shape %q (use process and inproc)", sh)
					}
					if err != nil {
						fmt.Fprintf(os.Stderr, "%s %s c=%d: %v\n", eng, sh, c, err)
						if eng == "postgres" && os.Getenv("SCION_TEST_POSTGRES_URL") == "" {
							break runs
						}
						return 1
					}
					printRow(eng, sh, c, res)
					k := eng + "/" + sh + "/" + cs
					all[k] = append(all[k], res)
				}
			}
		}
	}
	if runs > 1 {
		fmt.Printf("\nmedians over %d runs\n", runs)
		fmt.Printf("%-9s %-8s %5s %10s %9s %9s %9s %9s %10s %10s\n", "engine", "shape", "conc", "creates/s", "p50", "p99", "max", "hub cpu", "broker cpu", "client cpu")
		for _, eng := range strings.Split(engines, ",") {
			for _, cs := range ls {
				c, _ := strconv.Atoi(cs)
				for _, sh := range strings.Split(shapes, ",") {
					if rs := all[eng+"/"+sh+"/"+cs]; len(rs) > 0 {
						printRow(eng, sh, c, medianResult(rs))
					}
				}
			}
		}
	}
	return 0
}

func printRow(eng, shape string, c int, res result) {
	cpu := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return d.Round(time.Microsecond).String()
	}
	load := ""
	if res.load != "" {
		load = res.load
	}
	hub, br, cl := cpu(res.hubCPU), cpu(res.brokerCPU), cpu(res.selfCPU)
	if shape == "inproc" {
		hub, br, cl = "", "", cl+" (all)"
	}
	fmt.Printf("%-9s %-8s %5d %10.0f %9s %9s %9s %9s %10s %10s  %s\n", eng, shape, c, res.rate,
		res.p50.Round(time.Microsecond), res.p99.Round(time.Microsecond), res.max.Round(time.Microsecond), hub, br, cl, load)
}

// medianResult is the median of each figure over rs (each on its own).
func medianResult(rs []result) result {
	med := func(f func(result) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		sort.Float64s(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	d := func(f func(result) time.Duration) time.Duration {
		return time.Duration(med(func(r result) float64 { return float64(f(r)) }))
	}
	return result{
		rate:      med(func(r result) float64 { return r.rate }),
		p50:       d(func(r result) time.Duration { return r.p50 }),
		p99:       d(func(r result) time.Duration { return r.p99 }),
		max:       d(func(r result) time.Duration { return r.max }),
		hubCPU:    d(func(r result) time.Duration { return r.hubCPU }),
		brokerCPU: d(func(r result) time.Duration { return r.brokerCPU }),
		selfCPU:   d(func(r result) time.Duration { return r.selfCPU }),
	}
}

func openStore(ctx context.Context, eng string) (store.Store, func(), error) {
	switch eng {
	case "sqlite":
		dir, err := os.MkdirTemp(benchDir(), "scion-bench")
		if err != nil {
			return nil, nil, err
		}
		s, err := sqlite.Open(ctx, filepath.Join(dir, "hub.db"))
		return s, func() { s.Close(); removeLater(dir) }, err
	case "postgres":
		admin := os.Getenv("SCION_TEST_POSTGRES_URL")
		if admin == "" {
			return nil, nil, fmt.Errorf("SCION_TEST_POSTGRES_URL is not set (run .ci/postgres.sh)")
		}
		name := fmt.Sprintf("scion_bench_%d", time.Now().UnixNano())
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return nil, nil, err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return nil, nil, err
		}
		url := replaceDB(admin, name)
		s, err := postgres.Open(ctx, url)
		return s, func() {
			s.Close()
			if c, err := pgx.Connect(context.Background(), admin); err == nil {
				c.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
				c.Close(context.Background())
			}
		}, err
	}
	return nil, nil, fmt.Errorf("unknown engine %q", eng)
}

func replaceDB(url, db string) string {
	q := ""
	if i := strings.Index(url, "?"); i >= 0 {
		url, q = url[:i], url[i:]
	}
	i := strings.LastIndex(url, "/")
	return url[:i+1] + db + q
}

// result is one measurement.
type result struct {
	rate          float64
	p50, p99, max time.Duration
	// CPU time per create: the Hub's and the broker's process (process
	// shape), this whole process (in process).
	hubCPU, brokerCPU, selfCPU time.Duration
	load                       string // /proc/loadavg's first three fields when the level ended
}

// run measures n creates at concurrency conc on a Hub with brokers online
// brokers and preload agents already placed (spread over them). Creates
// name their broker explicitly, round robin, as a fleet's users would.
func run(eng string, conc, n, brokers, preload int) (result, error) {
	var res result
	ctx := context.Background()
	env, err := startInproc(ctx, eng, brokers, nil)
	if err != nil {
		return res, err
	}
	defer env.close()
	st, ids, names, projectID := env.st, env.ids, env.names, env.projectID
	// Agents already placed: written straight to the store (with their
	// reservations) once every broker has said hello, as a Hub that has
	// been running a while would hold them.
	if err := placeAgents(ctx, st, projectID, ids, preload); err != nil {
		return res, err
	}
	cl := env.cl
	create := func(name string, i int) error {
		_, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Broker: names[i%brokers], Start: true, Command: []string{"x"}})
		return err
	}
	var self0 time.Duration
	res, err = drive(conc, n, create, func() { self0 = procCPU(os.Getpid()) })
	if err != nil {
		return res, err
	}
	res.selfCPU = (procCPU(os.Getpid()) - self0) / time.Duration(n)
	return res, nil
}

// placeAgents writes n running agents (old-00000, ...) straight to the
// store with their reservations, spread over the brokers ids, as a Hub
// that has been running a while would hold them.
func placeAgents(ctx context.Context, st store.Store, projectID string, ids []string, n int) error {
	for i := range n {
		now := time.Now().UTC()
		a := &store.Agent{Slug: fmt.Sprintf("old-%05d", i), ProjectID: projectID, BrokerID: ids[i%len(ids)],
			Harness: "generic", Command: []string{"x"}, Phase: api.PhaseRunning, ContainerStatus: api.ContainerRunning,
			Generation: 1, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateAgent(ctx, a, new(int)); err != nil {
			return err
		}
	}
	return nil
}

// inproc is a Hub, its brokers (fake runtime) and an admin client in this
// process, on loopback.
type inproc struct {
	st        store.Store
	cl        *client.Client
	ids       []string
	names     []string
	projectID string
	closers   []func() // in reverse order of need
}

func (e *inproc) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// startInproc starts a Hub on eng with brokers brokers online, each
// providing for the "default" project, and no per-broker limit. With
// target, the hub.flat_runtime_brokers experiment is on and every broker
// is a flat instance serving *target (the same fake runtime: only the
// Hub's handling differs).
func startInproc(ctx context.Context, eng string, brokers int, target *api.RuntimeTarget) (e *inproc, err error) {
	e = &inproc{}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	st, cleanup, err := openStore(ctx, eng)
	if err != nil {
		return e, err
	}
	e.st, e.closers = st, append(e.closers, cleanup)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := hub.New(ctx, hub.Options{Store: st, Logger: log})
	if err != nil {
		return e, err
	}
	srv := httptest.NewServer(h.Handler())
	e.closers = append(e.closers, srv.Close, h.Close)
	h.SetPublicURL(srv.URL)
	tok, err := h.BootstrapAdmin(ctx)
	if err != nil {
		return e, err
	}
	if e.projectID, err = h.EnsureProject(ctx, "default", ""); err != nil {
		return e, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	e.cl = client.New(srv.URL, tok, client.WithHTTPClient(hc))
	if _, err := e.cl.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0}); err != nil {
		return e, err
	}
	if target != nil {
		set, err := e.cl.GetSettings(ctx)
		if err != nil {
			return e, err
		}
		set.Experiments = map[string]bool{api.ExperimentFlatRuntimeBrokers: true}
		if _, err := e.cl.PutSettings(ctx, *set); err != nil {
			return e, err
		}
	}
	dir, _ := os.MkdirTemp(benchDir(), "scion-bench-broker")
	bctx, stop := context.WithCancel(ctx)
	e.closers = append(e.closers, func() { removeLater(dir) }, stop)
	for i := range brokers {
		name := fmt.Sprintf("bench-%02d", i)
		var creds api.BrokerCredentials
		if target != nil {
			creds, err = h.RegisterFlatBroker(ctx, name, hub.BootstrapAdminID, true, *target, nil)
		} else {
			creds, err = h.RegisterBroker(ctx, name, hub.BootstrapAdminID, true)
		}
		if err != nil {
			return e, err
		}
		e.ids, e.names = append(e.ids, creds.BrokerID), append(e.names, name)
		if _, err := h.EnsureProject(ctx, "default", creds.BrokerID); err != nil {
			return e, err
		}
		b, err := broker.New(broker.Config{HubEndpoint: srv.URL, BrokerID: creds.BrokerID, Name: name,
			Secret: []byte(creds.Secret), Runtime: fake.New(), DataDir: filepath.Join(dir, name), Logger: log, RuntimeTarget: target,
			Capabilities: brokerCaps})
		if err != nil {
			return e, err
		}
		go b.Run(bctx)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = b.WaitConnected(wctx)
		cancel()
		if err != nil {
			return e, err
		}
	}
	return e, nil
}

// drive warms up conc connections, calls started, then runs n creates
// with conc concurrent callers and measures them.
func drive(conc, n int, create func(name string, i int) error, started func()) (result, error) {
	var res result
	// Warm up connections and caches.
	for i := range conc {
		if err := create(fmt.Sprintf("warm-%d", i), i); err != nil {
			return res, err
		}
	}
	// Flush what the set-up and the previous run left to write back, so
	// that it is not charged to this run's creates.
	syscall.Sync()
	started()
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				err := create(fmt.Sprintf("a-%d", i), i)
				lat[i] = time.Since(t0)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return res, firstErr
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	res = result{rate: float64(n) / el.Seconds(), p50: pct(.5), p99: pct(.99), max: lat[len(lat)-1], load: loadAvg()}
	return res, nil
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// fleetShapes are the Hubs runFleet measures (-shapes).
var fleetShapes string

// runFleet compares a loaded Hub (50 brokers, 5,000 agents placed) with an
// empty one (1 broker, nothing placed), same concurrency, same run.
func runFleet(engines, levels string, n int) {
	ls := strings.Split(levels, ",")
	conc, _ := strconv.Atoi(ls[len(ls)-1])
	fmt.Printf("agent create through the Hub API, concurrency %d, %d creates: empty Hub vs 50 brokers with 5,000 agents placed\n", conc, n)
	for _, eng := range strings.Split(engines, ",") {
		fmt.Printf("%-9s %5s %10s %9s %9s %9s\n", "engine", "conc", "creates/s", "p50", "p99", "max")
		// ABBA by default: this machine's file system slows down run after
		// run (directory creation costs from 16 to 380 us as the disk
		// state changes), so each shape is measured before and after the
		// other and the two runs of a shape are averaged.
		rates := map[string][]float64{}
		var err error
		for _, shape := range strings.Split(fleetShapes, ",") {
			var r result
			switch shape {
			case "empty":
				r, err = run(eng, conc, n, 1, 0)
			case "fleet":
				r, err = run(eng, conc, n, 50, 5000)
			default:
				err = fmt.Errorf("unknown shape %q (use empty and fleet)", shape)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %v\n", eng, shape, err)
				break
			}
			fmt.Printf("%-9s %5d %10.0f %9s %9s %9s\n", eng, conc, r.rate,
				r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond))
			rates[shape] = append(rates[shape], r.rate)
		}
		if err != nil || len(rates["empty"]) == 0 || len(rates["fleet"]) == 0 {
			continue
		}
		empty, full := result{rate: mean(rates["empty"])}, result{rate: mean(rates["fleet"])}
		fmt.Printf("%s: empty %.0f/s, fleet %.0f/s (means over the runs above): the fleet is %.1f%% slower (target: at most 20%%, and at least 1,000/s)\n\n",
			eng, empty.rate, full.rate, 100*(1-full.rate/empty.rate))
	}
}

// benchDir is where the database and the brokers' data go: $SCION_BENCH_DIR,
// else ~/.scion-bench, beside where a broker keeps its data by default
// (~/.scion). Where that is matters on the project's VM: a mkdir costs
// from 16 µs to 700 µs depending on the directory and on how much was
// deleted near it lately (measured; a broker makes two directories and
// one file per agent), so the bench prints what a bare mkdir costs in this
// directory before and after its runs (fsBaseline).
func benchDir() string {
	if d := os.Getenv("SCION_BENCH_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "."
	}
	d := filepath.Join(home, ".scion-bench")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "."
	}
	return d
}

// removals are the directories the runs made, removed when the bench ends:
// removing thousands of directories makes the next mkdirs near them slower
// on this VM's disk for a while, which would be charged to the next run.
var (
	removalsMu sync.Mutex
	removals   []string
)

func removeLater(dir string) {
	removalsMu.Lock()
	defer removalsMu.Unlock()
	removals = append(removals, dir)
}

func removeAll() {
	removalsMu.Lock()
	defer removalsMu.Unlock()
	for _, d := range removals {
		os.RemoveAll(d)
	}
	removals = nil
	if os.Getenv("SCION_BENCH_DIR") == "" {
		_ = os.Remove(benchDir()) // ~/.scion-bench, if nothing else is in it
	}
}

// fsBaseline prints what a bare mkdir costs in the bench's directory: the
// file system's share of a create, measured in the same process.
func fsBaseline(when string) {
	const n = 1000
	dir, err := os.MkdirTemp(benchDir(), "scion-bench-mkdir")
	if err != nil {
		fmt.Fprintf(os.Stderr, "mkdir baseline: %v\n", err)
		return
	}
	defer removeLater(dir)
	start := time.Now()
	for i := range n {
		if err := os.Mkdir(filepath.Join(dir, strconv.Itoa(i)), 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "mkdir baseline: %v\n", err)
			return
		}
	}
	fmt.Printf("file system %s: a bare mkdir in %s costs %s (a create on the fake runtime makes 2 directories and 1 file)\n",
		when, benchDir(), (time.Since(start) / n).Round(100*time.Nanosecond))
}

func mean(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
