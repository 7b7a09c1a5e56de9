package system

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/internal/wait"
)

// Hostile load: what one machine with many addresses can throw at a Hub
// that anyone can reach. Numbers are in docs/performance.md and the caps
// in docs/security.md ("Timeouts, connection caps and rate limits").
const (
	hostileConns = 10000
	// hostileAddrs source addresses (127.0.0.2 ...): on Linux all of
	// 127.0.0.0/8 is loopback, so each is a distinct client to the Hub,
	// and at most 160 connections each stay under the per-address cap
	// (256): it is the global cap and the timeouts that have to hold.
	hostileAddrs = 100
	// The signed-in client's p99 must stay under this.
	goodP99 = 100 * time.Millisecond
	// hubMaxConnsUnderTest is the Hub's --max-connections in the first
	// phase (default 8192): below the ~6,000-7,000 connections the attack
	// holds open.
	hubMaxConnsUnderTest = 5000
	// hubMaxConnsAboveAttack is the Hub's --max-connections in the second
	// phase: above the 10,000 hostile connections it holds, so the Hub
	// closes none of them to make room and all are open at once. With
	// FDReserve it fits the descriptor limit of 20,000 the tests can count
	// on.
	hubMaxConnsAboveAttack = 12000
	// holdExtra are the extra slots of the second phase's attacker, of
	// the kinds the Hub keeps open until a timeout (slow headers, idle
	// keep-alives): while the other slots wait out their backoff after a
	// 429, these keep hostileConns connections open.
	holdExtra = 6000
	// holdMargin is how many more than the N of a holding attack may be
	// open or dialing: connections the Hub closed that the attacker has
	// not seen closed yet, and dials not yet accepted, count in the
	// attacker's number but not in the Hub's.
	holdMargin = 700
)

// hostileKinds are the four attacks, each run by a quarter of the
// connections.
var hostileKinds = []string{"slow-headers", "slow-body", "idle-keepalive", "bad-join-token"}

// hostileStats count what the attackers saw.
type hostileStats struct {
	open, maxOpen, dials, dialErrs atomic.Int64
	status                         sync.Map // "kind status" -> *atomic.Int64
}

func (s *hostileStats) saw(kind string, status int) {
	v, _ := s.status.LoadOrStore(fmt.Sprintf("%s %d", kind, status), new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// TestHubUnderHostileConnections: 10,000 hostile connections (slow
// headers, slow bodies to the join route, idle keep-alives, bad join
// tokens) for 60 s (10 s with -short, never under CI=true; the first
// phase half as long) against a team
// Hub with its default limits, while a signed-in client makes calls, over
// a kept-alive connection and over a new connection each time as a CLI
// does. Both keep their p99 under 100 ms, and the Hub's open descriptors
// stay under max_connections + FDReserve. It runs in two phases, each on
// a Hub of its own:
//
//   - cap-below-attack: the Hub's global cap (hubMaxConnsUnderTest) is
//     below what the attack holds, so the Hub closes quiet connections to
//     make room for the signed-in client;
//   - all-open: the cap (hubMaxConnsAboveAttack) is above it, and the
//     attacker keeps 10,000 connections open at once, which the Hub holds
//     (its descriptors say so) while the client is measured.
//
// The attackers run in a child process (TestHostileAttacker) at nice 10,
// the Hub and this process at nice -20: on one shared 2-core machine the
// attackers' CPU would otherwise be the Hub's, which a remote attacker's
// is not, and the other work on the machine would be measured too.
func TestHubUnderHostileConnections(t *testing.T) {
	quietDone(t)
	requireBinary(t)
	duration := 60 * time.Second
	if testing.Short() && !inCI() {
		duration = 10 * time.Second
	}
	raiseNofile(t, 65536) // the Hub inherits it
	// The measuring client runs in this process: first on the CPU while
	// it measures, and back to where it was after. Every process a later
	// test starts inherits the nice value of the thread that starts it:
	// left at -20, the later tests' Hubs, brokers and CLIs took the CPU
	// from the Docker Engine (nice 0) whose latency those tests wait on.
	was := nice(t)
	renice(t, os.Getpid(), -20)
	t.Cleanup(func() { renice(t, os.Getpid(), was) })
	// Half as long: what it proves (the Hub makes room for the client
	// while the attack's slots reconnect every 1-3 s) holds from the
	// first cycles on; the 60 s hold of 10,000 connections is all-open's.
	t.Run("cap-below-attack", func(t *testing.T) {
		hostilePhase(t, duration/2, hubMaxConnsUnderTest, 0)
	})
	t.Run("all-open", func(t *testing.T) {
		hostilePhase(t, duration, hubMaxConnsAboveAttack, hostileConns)
	})
}

// hostilePhase runs the attack for duration against a new Hub started
// with --max-connections maxConns, measuring the signed-in client. hold 0
// is the plain attack (hostileConns slots, each reconnecting 1-3 s after
// the Hub closes it); hold N has the attacker keep N connections open at
// once (see TestHostileAttacker), which the Hub must then hold.
func hostilePhase(t *testing.T, duration time.Duration, maxConnsFlag, hold int) {
	hp := startTeamHub(t, newHost(t, "hub"), "--max-connections", strconv.Itoa(maxConnsFlag))
	renice(t, hp.proc.PID, -20)
	token := hp.adminToken(t)
	maxConns := hubMaxConns(t, hp.proc)
	if maxConns != maxConnsFlag {
		skipOrFail(t, "the Hub runs with max_connections %d, not %d (its descriptor limit is too low)", maxConns, maxConnsFlag)
	}
	fdCap := maxConns + transport.FDReserve // the documented descriptor cap
	addr := hp.URL[len("http://"):]
	t.Logf("hub pid %d: max_connections %d, so the descriptor cap is %d", hp.proc.PID, maxConns, fdCap)

	// The same calls with no attack: the client's normal latency here.
	baseEnd := time.Now().Add(5 * time.Second)
	var baseKeep, baseFresh []time.Duration
	var bw sync.WaitGroup
	bw.Add(2)
	go func() { defer bw.Done(); baseKeep, _ = goodClient(token, hp.URL, false, 50*time.Millisecond, baseEnd) }()
	go func() { defer bw.Done(); baseFresh, _ = goodClient(token, hp.URL, true, 200*time.Millisecond, baseEnd) }()
	bw.Wait()
	t.Logf("MEASURED: baseline, no attack: kept-alive p50 %v p99 %v (%d calls); new connection p50 %v p99 %v (%d calls)",
		pct(baseKeep, 50), pct(baseKeep, 99), len(baseKeep), pct(baseFresh, 50), pct(baseFresh, 99), len(baseFresh))

	baseFD := countFDs(hp.proc.PID) // the database, the listener, stdio

	// The ramp-up: the flood builds before the client is measured (the
	// holding attacker needs longer to open its 10,000).
	rampUp := 5 * time.Second
	if hold > 0 {
		rampUp = 10 * time.Second
	}
	ctx, stop := context.WithTimeout(context.Background(), rampUp+duration+60*time.Second)
	defer stop()
	// The Hub's descriptors, sampled every 250 ms; those sampled while the
	// client is measured are kept for their median.
	var maxFD atomic.Int64
	var measuring atomic.Bool
	var fdMu sync.Mutex
	var fdSamples []int64
	fdDone := make(chan struct{})
	go func() {
		defer close(fdDone)
		for ctx.Err() == nil {
			n := int64(countFDs(hp.proc.PID))
			if n > maxFD.Load() {
				maxFD.Store(n)
			}
			if measuring.Load() {
				fdMu.Lock()
				fdSamples = append(fdSamples, n)
				fdMu.Unlock()
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}()

	att := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileAttacker$", "-test.count=1")
	att.Env = append(os.Environ(), "SCION_BIN="+scionBin, "SCION_HOSTILE_TARGET="+addr,
		"SCION_HOSTILE_DURATION="+(rampUp+duration).String(), "SCION_HOSTILE_HOLD="+strconv.Itoa(hold))
	var attOut, attErr strings.Builder
	att.Stdout, att.Stderr = &attOut, &attErr
	if err := att.Start(); err != nil {
		t.Fatalf("start the attackers: %v", err)
	}
	attDone := make(chan error, 1)
	go func() { attDone <- att.Wait() }()
	sleepCtx(ctx, rampUp) // let the flood build before measuring
	t.Logf("Hub descriptors after the ramp-up: %d", countFDs(hp.proc.PID))

	measuring.Store(true)
	measureEnd := time.Now().Add(duration)
	var keep, fresh []time.Duration
	var keepErrs, freshErrs []string
	var cw sync.WaitGroup
	cw.Add(2)
	go func() { // a long-lived client: one kept-alive connection
		defer cw.Done()
		keep, keepErrs = goodClient(token, hp.URL, false, 50*time.Millisecond, measureEnd)
	}()
	go func() { // a CLI: a new connection for every call
		defer cw.Done()
		fresh, freshErrs = goodClient(token, hp.URL, true, 200*time.Millisecond, measureEnd)
	}()
	cw.Wait()
	measuring.Store(false)
	var st attackStats
	select {
	case err := <-attDone:
		if err != nil {
			t.Fatalf("the attackers failed: %v\n%s%s", err, attOut.String(), attErr.String())
		}
	case <-ctx.Done():
		t.Fatalf("the attackers did not stop:\n%s", attErr.String())
	}
	out := attOut.String()
	i := strings.Index(out, attackStatsPrefix)
	if i < 0 {
		t.Fatalf("the attackers reported nothing:\n%s%s", out, attErr.String())
	}
	line, _, _ := strings.Cut(out[i+len(attackStatsPrefix):], "\n")
	if err := json.Unmarshal([]byte(line), &st); err != nil {
		t.Fatalf("attack report %q: %v", line, err)
	}

	// Once the flood ends, the Hub gives its descriptors back.
	var after int
	// Not met in time is reported below, with the measurements.
	recovered, _ := wait.Until(20*time.Second, 250*time.Millisecond, func() error {
		if after = countFDs(hp.proc.PID); after >= 200 {
			return fmt.Errorf("the Hub holds %d descriptors", after)
		}
		return nil
	})
	stop()
	<-fdDone
	slices.Sort(fdSamples)
	medianFD := pct64(fdSamples, 50)
	measuredMax := pct64(fdSamples, 100)

	t.Logf("MEASURED: %v of hostile load, %d attacker slots from %d addresses: open hostile connections (attacker's view) median %d, max %d; %d dials (%d failed)",
		duration, st.Slots, hostileAddrs, st.MedianOpen, st.MaxOpen, st.Dials, st.DialErrs)
	t.Logf("MEASURED: answers the attackers got: %v", st.Answers)
	t.Logf("MEASURED: signed-in client, kept-alive connection: %d calls, p50 %v, p99 %v, max %v, %d errors",
		len(keep), pct(keep, 50), pct(keep, 99), pct(keep, 100), len(keepErrs))
	t.Logf("MEASURED: signed-in client, new connection per call: %d calls, p50 %v, p99 %v, max %v, %d errors",
		len(fresh), pct(fresh, 50), pct(fresh, 99), pct(fresh, 100), len(freshErrs))
	t.Logf("MEASURED: Hub open descriptors: %d before the attack; median %d and max %d while the client was measured, max %d during the flood (cap %d = max_connections %d + %d); %d, %v after it ended",
		baseFD, medianFD, measuredMax, maxFD.Load(), fdCap, maxConns, transport.FDReserve, after, recovered.Round(100*time.Millisecond))

	if len(keepErrs) > 0 || len(freshErrs) > 0 {
		t.Errorf("the signed-in client's calls failed: kept-alive %v; new connections %v", first(keepErrs, 5), first(freshErrs, 5))
	}
	if p := pct(keep, 99); len(keep) == 0 || p >= goodP99 {
		t.Errorf("kept-alive client p99 %v over %d calls, want < %v", p, len(keep), goodP99)
	}
	if p := pct(fresh, 99); len(fresh) == 0 || p >= goodP99 {
		t.Errorf("new-connection client p99 %v over %d calls, want < %v", p, len(fresh), goodP99)
	}
	if m := maxFD.Load(); m >= int64(fdCap) {
		t.Errorf("the Hub held %d descriptors, want fewer than %d", m, fdCap)
	}
	if hold == 0 && st.MaxOpen < int64(maxConns) {
		t.Errorf("the attack never held more than %d connections, under the Hub's cap: not the load this test is about", st.MaxOpen)
	}
	if hold > 0 {
		// The attacker's count and the Hub's descriptors both say that
		// the 10,000 were open at once while the client was measured.
		// The attacker reaches the load, and holds it most of the time:
		// it reopens what the Hub answers or cuts only when it gets CPU
		// (below), so on a loaded machine its median dips under the
		// target (9,935 of 10,000 in a test/system run beside two busy
		// loops, max 10,700); 5% may be missing.
		if st.MaxOpen < int64(hold) || st.MedianOpen < int64(hold)*95/100 {
			t.Errorf("the attack held a median of %d connections open (max %d), want %d at once and a median of at least 95%% of it",
				st.MedianOpen, st.MaxOpen, hold)
		}
		// At some instant while the client was measured the Hub held
		// them all (1% may be between a cut and its reopen).
		if held := measuredMax - int64(baseFD); held < int64(hold)*99/100 {
			t.Errorf("the Hub held at most %d hostile connections while the client was measured (%d descriptors, %d before the attack), want %d",
				held, measuredMax, baseFD, hold)
		}
		// And most of the time: the Hub answers the join route's flood
		// with 429 and cuts bodies that trickle too slowly (tens of
		// thousands of closes a minute), and the attacker, at nice 10,
		// reopens each as soon as it gets CPU, so the connections between
		// a close and the reopen grow with the machine's load, not with
		// anything the Hub does: a clean-clone CI run at load 25 measured
		// a median of 9,547 of 10,000 (max 10,441); 10% may be.
		if medianFD-int64(baseFD) < int64(hold)*90/100 {
			t.Errorf("the Hub held a median of %d descriptors while the client was measured, %d before the attack: under 90%% of the %d hostile connections",
				medianFD, baseFD, hold)
		}
	}
	if st.Answers["bad-join-token 429"] == 0 || st.Answers["slow-body 429"] == 0 {
		t.Errorf("the join route never answered 429 to the flood (%v)", st.Answers)
	}
	if after >= 200 {
		t.Errorf("the Hub still held %d descriptors 20 s after the flood ended", after)
	}
}

// attackStats is what the attacker process reports, as one JSON line
// after attackStatsPrefix on its stdout.
type attackStats struct {
	Slots, MaxOpen, MedianOpen, Dials, DialErrs int64
	Answers                                     map[string]int64 // "kind status" -> count
}

const attackStatsPrefix = "HOSTILE-STATS "

// TestHostileAttacker is the attackers of TestHubUnderHostileConnections,
// run by it as a child process; on its own it skips.
//
// With SCION_HOSTILE_HOLD=N it keeps N connections open at once: it runs
// holdExtra more slots of the kinds the Hub keeps open until a timeout,
// and a slot dials only while fewer are open or
// dialing (a semaphore) than N+holdMargin, so it never opens more than the
// Hub's cap allows and none is closed to make room.
func TestHostileAttacker(t *testing.T) {
	target := os.Getenv("SCION_HOSTILE_TARGET")
	if target == "" {
		t.Skip("the attacker process of TestHubUnderHostileConnections; only it runs this")
	}
	d, err := time.ParseDuration(os.Getenv("SCION_HOSTILE_DURATION"))
	if err != nil {
		t.Fatal(err)
	}
	hold, _ := strconv.Atoi(os.Getenv("SCION_HOSTILE_HOLD"))
	renice(t, os.Getpid(), 10)
	raiseNofile(t, 65536)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	st := &hostileStats{}
	slots := hostileConns
	var sem chan struct{}
	if hold > 0 {
		slots += holdExtra
		sem = make(chan struct{}, hold+holdMargin)
	}
	var wg sync.WaitGroup
	for i := 0; i < slots; i++ {
		src := net.IPv4(127, 0, 0, byte(2+i%hostileAddrs))
		kind := hostileKinds[i%len(hostileKinds)]
		if i >= hostileConns { // the extra slots of a holding attack
			kind = []string{"slow-headers", "idle-keepalive"}[i%2]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the first dials over 2 s, as a flood ramps up.
			sleepCtx(ctx, time.Duration(rand.Int64N(int64(2*time.Second))))
			hostile(ctx, st, kind, src, target, sem)
		}()
	}
	var samples []int64
	sleepCtx(ctx, 3*time.Second)
	if hold > 0 {
		sleepCtx(ctx, 5*time.Second) // the rest of its longer ramp-up
	}
	for ctx.Err() == nil {
		samples = append(samples, st.open.Load())
		sleepCtx(ctx, time.Second)
	}
	wg.Wait()
	slices.Sort(samples)
	rep := attackStats{Slots: int64(slots), MaxOpen: st.maxOpen.Load(), MedianOpen: pct64(samples, 50), Dials: st.dials.Load(), DialErrs: st.dialErrs.Load(),
		Answers: map[string]int64{}}
	st.status.Range(func(k, v any) bool {
		rep.Answers[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	b, _ := json.Marshal(rep)
	fmt.Printf("\n%s%s\n", attackStatsPrefix, b)
}

// nice is the calling thread's nice value (0 if it cannot be read).
func nice(t *testing.T) int {
	// The raw system call answers 20 - nice, so that it is never negative.
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Logf("getpriority: %v (restoring nice 0)", err)
		return 0
	}
	return 20 - raw
}

// renice sets the nice value of every thread of pid (threads made later
// inherit it from the thread that makes them).
func renice(t *testing.T, pid, prio int) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Logf("renice %d: %v (measuring at normal priority)", pid, err)
		return
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, prio); err != nil {
			t.Logf("renice %d: %v (measuring at normal priority)", pid, err)
			return
		}
	}
}

// hostile runs one attacker slot until ctx ends: connect from src, attack
// until the Hub closes the connection, wait a little, connect again.
// With sem not nil, a slot holds a place in it from before it dials until
// its connection is closed.
func hostile(ctx context.Context, st *hostileStats, kind string, src net.IP, addr string, sem chan struct{}) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
	release := func() {}
	for ctx.Err() == nil {
		if sem != nil {
			select {
			case sem <- struct{}{}:
				release = func() { <-sem }
			case <-ctx.Done():
				return
			}
		}
		st.dials.Add(1)
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			release()
			st.dialErrs.Add(1)
			sleepCtx(ctx, time.Second)
			continue
		}
		if n := st.open.Add(1); n > st.maxOpen.Load() {
			st.maxOpen.Store(n) // racy max; good enough for a report
		}
		attackConn(ctx, st, kind, c)
		c.Close()
		st.open.Add(-1)
		release()
		sleepCtx(ctx, time.Second+time.Duration(rand.Int64N(int64(2*time.Second))))
	}
}

// attackConn does kind on c until the Hub closes it or ctx ends.
func attackConn(ctx context.Context, st *hostileStats, kind string, c net.Conn) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	br := bufio.NewReader(c)
	// answer reads one response (the Hub answered instead of waiting).
	answer := func() bool {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		st.saw(kind, resp.StatusCode)
		return resp.Header.Get("Connection") != "close"
	}
	// hold waits while the Hub keeps c open, calling tick every 2 s; it
	// returns when c is closed (or answered, for the slow writers).
	hold := func(tick func() error) {
		for ctx.Err() == nil {
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := br.Peek(1); err != nil {
				if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
					return // closed
				}
				if tick != nil && tick() != nil {
					return
				}
				continue
			}
			answer() // the Hub answered (a timeout, a 429) instead
			return
		}
	}
	switch kind {
	case "slow-headers":
		if _, err := io.WriteString(c, "GET /api/v1/projects HTTP/1.1\r\nHost: hub\r\n"); err != nil {
			return
		}
		i := 0
		hold(func() error { i++; _, err := fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i); return err })
	case "slow-body":
		if _, err := io.WriteString(c, "POST /api/v1/runtime-brokers/join HTTP/1.1\r\nHost: hub\r\n"+
			"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{\"name\":\""); err != nil {
			return
		}
		hold(func() error { _, err := io.WriteString(c, "a"); return err })
	case "idle-keepalive":
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n"); err != nil || !answer() {
			return
		}
		hold(nil)
	case "bad-join-token":
		body := `{"name":"intruder","joinToken":"scj_0000000000000000000000000000000000000000000000"}`
		req := fmt.Sprintf("POST /api/v1/runtime-brokers/join HTTP/1.1\r\nHost: hub\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		for ctx.Err() == nil {
			if _, err := io.WriteString(c, req); err != nil || !answer() {
				return
			}
			sleepCtx(ctx, time.Second)
		}
	}
}

// goodClient calls the Hub as a signed-in admin every interval until end
// and returns each call's latency and the failures.
func goodClient(token, hubURL string, fresh bool, interval time.Duration, end time.Time) ([]time.Duration, []string) {
	tr := &http.Transport{DisableKeepAlives: fresh, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	paths := []string{"/api/v1/auth/whoami", "/api/v1/projects", "/api/v1/runtime-brokers"}
	var lat []time.Duration
	var errs []string
	for i := 0; time.Now().Before(end); i++ {
		req, _ := http.NewRequest(http.MethodGet, hubURL+paths[i%len(paths)], nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := hc.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s", resp.Status)
			}
		}
		d := time.Since(start)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s after %v: %v", req.URL.Path, d.Round(time.Millisecond), err))
		} else {
			lat = append(lat, d)
		}
		time.Sleep(interval)
	}
	return lat, errs
}

var maxConnsLog = regexp.MustCompile(`max_connections=(\d+)`)

// hubMaxConns reads the connection cap the Hub logged at start (the
// default, fitted to its descriptor limit).
func hubMaxConns(t *testing.T, p *Proc) int {
	t.Helper()
	b, _ := os.ReadFile(p.Stderr)
	m := maxConnsLog.FindSubmatch(b)
	if m == nil {
		t.Fatalf("the Hub did not log max_connections:\n%s", b)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// raiseNofile raises this process's descriptor limit to n (root may raise
// the hard limit too); a limit it cannot raise enough fails the test.
func raiseNofile(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur >= n {
		return
	}
	want := syscall.Rlimit{Cur: n, Max: max(n, rl.Max)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		want = syscall.Rlimit{Cur: rl.Max, Max: rl.Max}
		if err2 := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err2 != nil || rl.Max < hostileConns+1024 {
			skipOrFail(t, "cannot raise RLIMIT_NOFILE to %d (%v; hard limit %d)", n, err, rl.Max)
		}
	}
}

// countFDs is the number of open descriptors of pid.
func countFDs(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return len(es)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// pct is the p-th percentile of ds (100: the max); it sorts ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := (len(ds)*p + 99) / 100
	return ds[min(max(i-1, 0), len(ds)-1)].Round(100 * time.Microsecond)
}

func pct64(xs []int64, p int) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := (len(xs)*p + 99) / 100
	return xs[min(max(i-1, 0), len(xs)-1)]
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }
