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
	fleet := flag.Bool("fleet", false, "instead: 50 brokers with 5,000 agents placed vs an empty Hub, at -c's last level")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
	flag.StringVar(&fleetShapes, "shapes", "empty,fleet,fleet,empty", "with -fleet: the Hubs to measure, in order; a shape measured twice is averaged")
	flag.Parse()
	defer removeAll()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	fsBaseline("before")
	defer fsBaseline("after")
	if *fleet {
		runFleet(*engines, *levels, *n)
		return
	}
	fmt.Printf("agent create through the Hub API (fake runtime, 1 broker), %d creates per level\n", *n)
	fmt.Printf("%-9s %5s %10s %9s %9s %9s\n", "engine", "conc", "creates/s", "p50", "p99", "max")
	for _, eng := range strings.Split(*engines, ",") {
		for _, cs := range strings.Split(*levels, ",") {
			c, _ := strconv.Atoi(cs)
			if _, err := run(eng, c, *n, 1, 0); err != nil {
				fmt.Fprintf(os.Stderr, "%s c=%d: %v\n", eng, c, err)
				if eng == "postgres" && os.Getenv("SCION_TEST_POSTGRES_URL") == "" {
					break
				}
				removeAll()
				os.Exit(1)
			}
		}
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
}

// run measures n creates at concurrency conc on a Hub with brokers online
// brokers and preload agents already placed (spread over them). Creates
// name their broker explicitly, round robin, as a fleet's users would.
func run(eng string, conc, n, brokers, preload int) (result, error) {
	var res result
	ctx := context.Background()
	st, cleanup, err := openStore(ctx, eng)
	if err != nil {
		return res, err
	}
	defer cleanup()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := hub.New(ctx, hub.Options{Store: st, Logger: log})
	if err != nil {
		return res, err
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	defer h.Close()
	h.SetPublicURL(srv.URL)
	tok, err := h.BootstrapAdmin(ctx)
	if err != nil {
		return res, err
	}
	projectID, err := h.EnsureProject(ctx, "default", "")
	if err != nil {
		return res, err
	}
	dir, _ := os.MkdirTemp(benchDir(), "scion-bench-broker")
	defer removeLater(dir)
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	ids := make([]string, brokers)
	names := make([]string, brokers)
	for i := range brokers {
		names[i] = fmt.Sprintf("bench-%02d", i)
		creds, err := h.RegisterBroker(ctx, names[i], hub.BootstrapAdminID, true)
		if err != nil {
			return res, err
		}
		ids[i] = creds.BrokerID
		if _, err := h.EnsureProject(ctx, "default", creds.BrokerID); err != nil {
			return res, err
		}
		b, err := broker.New(broker.Config{HubEndpoint: srv.URL, BrokerID: creds.BrokerID, Name: names[i],
			Secret: []byte(creds.Secret), Runtime: fake.New(), DataDir: filepath.Join(dir, names[i]), Logger: log})
		if err != nil {
			return res, err
		}
		go b.Run(bctx)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = b.WaitConnected(wctx)
		cancel()
		if err != nil {
			return res, err
		}
	}
	// Agents already placed: written straight to the store (with their
	// reservations) once every broker has said hello, as a Hub that has
	// been running a while would hold them.
	for i := range preload {
		now := time.Now().UTC()
		a := &store.Agent{Slug: fmt.Sprintf("old-%05d", i), ProjectID: projectID, BrokerID: ids[i%brokers],
			Harness: "generic", Command: []string{"x"}, Phase: api.PhaseRunning, ContainerStatus: api.ContainerRunning,
			Generation: 1, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateAgent(ctx, a, new(int)); err != nil {
			return res, err
		}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	cl := client.New(srv.URL, tok, client.WithHTTPClient(hc))
	if _, err := cl.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0}); err != nil {
		return res, err
	}
	create := func(name string, i int) error {
		_, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Broker: names[i%brokers], Start: true, Command: []string{"x"}})
		return err
	}
	// Warm up connections and caches.
	for i := range conc {
		if err := create(fmt.Sprintf("warm-%d", i), i); err != nil {
			return res, err
		}
	}
	// Flush what the set-up and the previous run left to write back, so
	// that it is not charged to this run's creates.
	syscall.Sync()
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
	res = result{rate: float64(n) / el.Seconds(), p50: pct(.5), p99: pct(.99), max: lat[len(lat)-1]}
	fmt.Printf("%-9s %5d %10.0f %9s %9s %9s\n", eng, conc, res.rate,
		res.p50.Round(time.Microsecond), res.p99.Round(time.Microsecond), res.max.Round(time.Microsecond))
	return res, nil
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
