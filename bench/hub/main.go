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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	flag.Parse()
	fmt.Printf("agent create through the Hub API (fake runtime, 1 broker), %d creates per level\n", *n)
	fmt.Printf("%-9s %5s %10s %9s %9s %9s\n", "engine", "conc", "creates/s", "p50", "p99", "max")
	for _, eng := range strings.Split(*engines, ",") {
		for _, cs := range strings.Split(*levels, ",") {
			c, _ := strconv.Atoi(cs)
			if err := run(eng, c, *n); err != nil {
				fmt.Fprintf(os.Stderr, "%s c=%d: %v\n", eng, c, err)
				if eng == "postgres" && os.Getenv("SCION_TEST_POSTGRES_URL") == "" {
					break
				}
				os.Exit(1)
			}
		}
	}
}

func openStore(ctx context.Context, eng string) (store.Store, func(), error) {
	switch eng {
	case "sqlite":
		dir, err := os.MkdirTemp("", "scion-bench")
		if err != nil {
			return nil, nil, err
		}
		s, err := sqlite.Open(ctx, filepath.Join(dir, "hub.db"))
		return s, func() { s.Close(); os.RemoveAll(dir) }, err
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

func run(eng string, conc, n int) error {
	ctx := context.Background()
	st, cleanup, err := openStore(ctx, eng)
	if err != nil {
		return err
	}
	defer cleanup()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := hub.New(ctx, hub.Options{Store: st, Logger: log})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	defer h.Close()
	h.SetPublicURL(srv.URL)
	tok, err := h.BootstrapAdmin(ctx)
	if err != nil {
		return err
	}
	creds, err := h.RegisterBroker(ctx, "bench", hub.BootstrapAdminID, true)
	if err != nil {
		return err
	}
	if _, err := h.EnsureProject(ctx, "default", creds.BrokerID); err != nil {
		return err
	}
	dir, _ := os.MkdirTemp("", "scion-bench-broker")
	defer os.RemoveAll(dir)
	b, err := broker.New(broker.Config{HubEndpoint: srv.URL, BrokerID: creds.BrokerID, Name: "bench",
		Secret: []byte(creds.Secret), Runtime: fake.New(), DataDir: dir, Logger: log})
	if err != nil {
		return err
	}
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Run(bctx)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.WaitConnected(wctx); err != nil {
		return err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	cl := client.New(srv.URL, tok, client.WithHTTPClient(hc))
	if _, err := cl.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 0}); err != nil {
		return err
	}
	// Warm up connections and caches.
	for i := range conc {
		if _, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: fmt.Sprintf("warm-%d", i), Project: "default", Start: true, Command: []string{"x"}}); err != nil {
			return err
		}
	}
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
				_, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: fmt.Sprintf("a-%d", i), Project: "default", Start: true, Command: []string{"x"}})
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
		return firstErr
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Printf("%-9s %5d %10.0f %9s %9s %9s\n", eng, conc, float64(n)/el.Seconds(),
		pct(.5).Round(time.Microsecond), pct(.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}
