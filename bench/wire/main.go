// Command wire benchmarks the control channel (wire.Conn) against bare
// coder/websocket echo over loopback, and measures what an idle connection
// costs the Hub.
//
//	go run ./bench/wire                    # defaults: -n 20000 -c 8 -payload 256 -idle 500
//	go run ./bench/wire -runs 5 -idle 0    # median of 5 interleaved runs (a shared, noisy machine)
//
// Latency: N sequential round trips on each side, then the same N spread
// over C concurrent callers (wire: C goroutines sharing one Conn, as the Hub
// does; bare: C connections, since a bare WebSocket cannot multiplex).
// A third baseline, "bare + hand-off", is the bare echo with one change: a
// reader goroutine hands each reply to the waiting caller over a channel,
// the least any channel that multiplexes callers on one socket must do
// (the caller cannot read the socket itself while others share it). Its
// ratio to the bare echo is the floor for a multiplexed design.
// Idle memory: a child process opens -idle connections to this one; the
// HeapInuse+StackInuse growth of this (server) process divided by their
// number is the Hub-side cost of an idle broker connection.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/wire"
)

func main() {
	n := flag.Int("n", 20000, "round trips per measurement")
	conc := flag.Int("c", 8, "concurrent callers")
	size := flag.Int("payload", 256, "payload bytes")
	idle := flag.Int("idle", 500, "idle connections for the memory measurement (0: skip)")
	child := flag.String("child", "", "internal: dial -idle connections to this address and wait")
	serve := flag.Bool("serve", false, "internal: serve and print the address")
	mode := flag.String("mode", "both", "latency with servers in this process (inproc), in a child (split), or both")
	runs := flag.Int("runs", 1, "repeat each latency measurement this many times, interleaved, and print the medians")
	flag.StringVar(&memProfile, "memprofile", "", "write a heap profile of the idle hub side here")
	flag.Parse()
	if memProfile != "" {
		runtime.MemProfileRate = 1
	}
	if *child != "" {
		runChild(*child, *idle)
		return
	}

	if *serve {
		fmt.Println(startServer(new(atomic.Int64)))
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent exits
		return
	}

	payload := make([]byte, *size)
	rnd := rand.NewChaCha8([32]byte{7})
	_, _ = rnd.Read(payload)

	var serving atomic.Int64
	addr := startServer(&serving)
	fmt.Printf("round trips over loopback, %d-byte payload, GOMAXPROCS=%d\n", *size, runtime.GOMAXPROCS(0))
	if *mode != "split" {
		fmt.Printf("\nclients and servers in this process\n")
		latency(addr, *n, *conc, *runs, payload)
	}
	if *mode != "inproc" {
		fmt.Printf("\nservers in a child process\n")
		cmd, remote := spawn("-serve")
		latency(remote, *n, *conc, *runs, payload)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	if *idle > 0 {
		idleMemory(addr, *idle, &serving)
	}
}

// startServer serves /wire (a wire.Conn with an echo handler) and /bare
// (a coder/websocket echo loop) on a loopback port, and returns its address.
func startServer(serving *atomic.Int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/wire", func(w http.ResponseWriter, r *http.Request) {
		c, err := wire.Accept(w, r, wire.Options{})
		if err != nil {
			return
		}
		c.Handle(wire.MethodEcho, echo)
		c.Handle(rawEcho, func(_ context.Context, req *wire.Request) (any, error) { return req.Body, nil })
		serving.Add(1)
		// As the Hub does (hub/channel.go): the reader is the only goroutine.
		if err := c.Start(context.Background(), func(error) { serving.Add(-1) }); err != nil {
			log.Fatal(err)
		}
	})
	mux.HandleFunc("/bare", bareEcho)
	go func() { _ = http.Serve(ln, mux) }()
	return ln.Addr().String()
}

// spawn starts this program again with args and returns it and the first
// line it prints.
func spawn(args ...string) (*exec.Cmd, string) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // closed when we exit
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		log.Fatalf("%v: no output", args)
	}
	return cmd, lines.Text()
}

// rawEcho echoes its body as json.RawMessage: the same round trip without
// encoding/json reflecting over the payload type, i.e. the engine's own cost.
const rawEcho = "echo.raw"

func latency(addr string, n, conc, runs int, payload []byte) {
	if runs > 1 {
		fmt.Printf("(median of %d runs)\n", runs)
	}
	fmt.Printf("%-30s %10s %10s %10s\n", "", "p50", "p99", "mean")
	for _, callers := range []int{1, conc} {
		var bares, hops, ourss, raws []stats
		for r := 0; r < runs; r++ {
			bares = append(bares, measure(n, callers, func() func() { return bareClient(addr, payload) }))
			hops = append(hops, measure(n, callers, func() func() { return hopClient(addr, payload) }))
			ourss = append(ourss, measure(n, callers, func() func() { return wireClient(addr, payload, false) }))
			raws = append(raws, measure(n, callers, func() func() { return wireClient(addr, payload, true) }))
		}
		bare, hop, ours, raw := median(bares), median(hops), median(ourss), median(raws)
		label := "sequential"
		if callers > 1 {
			label = fmt.Sprintf("%d concurrent", callers)
		}
		row(label+" bare", bare)
		row(label+" bare + hand-off", hop)
		row(label+" wire Echo", ours)
		row(label+" wire raw", raw)
		fmt.Printf("%-30s %9.2fx %9.2fx %9.2fx\n", label+" ratio Echo/bare",
			ratio(ours.p50, bare.p50), ratio(ours.p99, bare.p99), ratio(ours.mean, bare.mean))
		fmt.Printf("%-30s %9.2fx %9.2fx %9.2fx\n", label+" ratio raw/bare",
			ratio(raw.p50, bare.p50), ratio(raw.p99, bare.p99), ratio(raw.mean, bare.mean))
		fmt.Printf("%-30s %9.2fx %9.2fx %9.2fx\n", label+" ratio hand-off/bare",
			ratio(hop.p50, bare.p50), ratio(hop.p99, bare.p99), ratio(hop.mean, bare.mean))
	}
}

// median is the median of each statistic over runs.
func median(runs []stats) stats {
	pick := func(f func(stats) time.Duration) time.Duration {
		v := make([]time.Duration, len(runs))
		for i, s := range runs {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return stats{
		pick(func(s stats) time.Duration { return s.p50 }),
		pick(func(s stats) time.Duration { return s.p99 }),
		pick(func(s stats) time.Duration { return s.mean }),
	}
}

type stats struct{ p50, p99, mean time.Duration }

func row(label string, s stats) {
	fmt.Printf("%-30s %10v %10v %10v\n", label, s.p50.Round(100*time.Nanosecond),
		s.p99.Round(100*time.Nanosecond), s.mean.Round(100*time.Nanosecond))
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// measure runs n round trips split over callers goroutines, each with its
// own client from mk (which may share a connection), after a warm-up.
func measure(n, callers int, mk func() func()) stats {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	per := n / callers
	for g := 0; g < callers; g++ {
		rt := mk()
		for i := 0; i < 1000/callers+1; i++ {
			rt()
		}
		wg.Add(1)
		go func(part []time.Duration) {
			defer wg.Done()
			for i := range part {
				t0 := time.Now()
				rt()
				part[i] = time.Since(t0)
			}
		}(lat[g*per : (g+1)*per])
	}
	wg.Wait()
	lat = lat[:per*callers]
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	return stats{lat[len(lat)/2], lat[len(lat)*99/100], sum / time.Duration(len(lat))}
}

func echo(_ context.Context, req *wire.Request) (any, error) {
	var e wire.Echo
	if err := req.Decode(&e); err != nil {
		return nil, err
	}
	return e, nil
}

func bareEcho(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	for {
		typ, msg, err := ws.Read(context.Background())
		if err != nil {
			return
		}
		if err := ws.Write(context.Background(), typ, msg); err != nil {
			return
		}
	}
}

func dial(addr, path string) *websocket.Conn {
	ws, _, err := websocket.Dial(context.Background(), "ws://"+addr+path, nil)
	if err != nil {
		log.Fatal(err)
	}
	return ws
}

// bareClient echoes the payload on its own connection. The payload is
// sent JSON-encoded as wire would send it, so both carry the same bytes.
func bareClient(addr string, payload []byte) func() {
	ws := dial(addr, "/bare")
	msg, err := json.Marshal(wire.Echo{Data: payload})
	if err != nil {
		log.Fatal(err)
	}
	return func() {
		if err := ws.Write(context.Background(), websocket.MessageText, msg); err != nil {
			log.Fatal(err)
		}
		if _, _, err := ws.Read(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
}

// hopClient is bareClient with the reply handed from a reader goroutine
// to the caller over a channel (see the package doc).
func hopClient(addr string, payload []byte) func() {
	ws := dial(addr, "/bare")
	msg, err := json.Marshal(wire.Echo{Data: payload})
	if err != nil {
		log.Fatal(err)
	}
	replies := make(chan []byte, 1)
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				close(replies)
				return
			}
			replies <- b
		}
	}()
	return func() {
		if err := ws.Write(context.Background(), websocket.MessageText, msg); err != nil {
			log.Fatal(err)
		}
		if _, ok := <-replies; !ok {
			log.Fatal("bare + hand-off: connection closed")
		}
	}
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*wire.Conn{}
)

// wireClient calls echo on a Conn shared by all callers to addr: with the
// Echo type (encoding/json on both sides, as real methods do) or, raw, with
// the encoded Echo as json.RawMessage.
func wireClient(addr string, payload []byte, raw bool) func() {
	sharedMu.Lock()
	c := shared[addr]
	if c == nil {
		c = wire.NewConn(dial(addr, "/wire"), wire.Options{})
		go func() { _ = c.Run(context.Background()) }()
		shared[addr] = c
	}
	sharedMu.Unlock()
	in := wire.Echo{Data: payload}
	if raw {
		body, err := json.Marshal(in)
		if err != nil {
			log.Fatal(err)
		}
		return func() {
			var out json.RawMessage
			if err := c.Call(context.Background(), rawEcho, json.RawMessage(body), &out); err != nil {
				log.Fatal(err)
			}
		}
	}
	return func() {
		var out wire.Echo
		if err := c.Call(context.Background(), wire.MethodEcho, in, &out); err != nil {
			log.Fatal(err)
		}
	}
}

var memProfile string

// inuse is the live heap and goroutine stack memory.
func inuse() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

func perConn(h0, s0, h1, s1 uint64, goroutines, n int) string {
	kb := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) / 1024 }
	return fmt.Sprintf("%5.1f KB per connection (heap %.1f + stacks %.1f), %.2f goroutines per connection",
		kb(h0+s0, h1+s1), kb(h0, h1), kb(s0, s1), float64(goroutines)/float64(n))
}

func idleMemory(addr string, n int, serving *atomic.Int64) {
	base := serving.Load()
	// Let the benchmark's own workers (idle for a second) exit first.
	time.Sleep(1500 * time.Millisecond)
	h0, s0 := inuse()
	g0 := runtime.NumGoroutine()

	cmd := exec.Command(os.Args[0], "-child", addr, "-idle", fmt.Sprint(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready") {
		log.Fatalf("child: %q", lines.Text())
	}
	for serving.Load() < base+int64(n) {
		time.Sleep(10 * time.Millisecond)
	}
	// Each connection made one call (like a broker's hello); wait for the
	// worker that served it to go idle and exit, as on a quiet Hub.
	time.Sleep(1500 * time.Millisecond)
	h1, s1 := inuse()
	g1 := runtime.NumGoroutine()
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			log.Fatal(err)
		}
		_ = pprof.WriteHeapProfile(f)
		f.Close()
	}
	fmt.Printf("idle connections: %d\n", n)
	fmt.Printf("  hub side (server):    %s\n", perConn(h0, s0, h1, s1, g1-g0, n))
	fmt.Printf("  broker side (client): %s\n", strings.TrimPrefix(lines.Text(), "ready "))
	stdin.Close()
	_ = cmd.Wait()
}

// runChild opens n connections to addr, makes one call on each, reports
// its own per-connection memory and waits for stdin to close.
func runChild(addr string, n int) {
	h0, s0 := inuse()
	g0 := runtime.NumGoroutine()
	conns := make([]*wire.Conn, n)
	for i := range conns {
		c := wire.NewConn(dial(addr, "/wire"), wire.Options{})
		go func() { _ = c.Run(context.Background()) }()
		if err := c.Call(context.Background(), wire.MethodEcho, wire.Echo{Data: []byte("hello")}, nil); err != nil {
			log.Fatal(err)
		}
		conns[i] = c
	}
	h1, s1 := inuse()
	fmt.Printf("ready %s\n", perConn(h0, s0, h1, s1, runtime.NumGoroutine()-g0, n))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for _, c := range conns {
		c.Close("done")
	}
}
