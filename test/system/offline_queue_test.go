package system

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/wait"
)

// queuedStops is how many agents TestQueuedStopsAcrossBrokerCut starts and
// then stops while their broker is cut off (the figure).
const queuedStops = 50

// TestQueuedStopsAcrossBrokerCut: issue 5, "queue 50 stops while a broker
// is cut off; reconnect it: all 50 containers stop, each once; capacity is
// released exactly when the inventory shows the containers gone".
//
// The cut: the broker process is frozen with SIGSTOP. Its TCP connection
// stays open (as in a network partition, nothing is closed), so only the
// missed heartbeats can tell the Hub; the fake runtime's containers live
// in the frozen process and are still "running" when it thaws, so the
// queued stops have real work to do after the reconnect.
//
// Observables, all from outside the processes:
//   - every stop is answered 202 with container status stop_queued and a
//     pending queued dispatch; the brokers' runningAgents stays 50;
//   - after the thaw every agent leaves stop_queued for a stopped container
//     status, and at every poll meanwhile reservations equal the agents
//     still stop_queued (released exactly when the stop's effect shows);
//   - "each once" twice over: the Hub logs "queued dispatch delivered"
//     (method agent.stop) exactly once per agent (the answer of each queued
//     stop applied once; the dispatch metric scion_dispatch_duration_seconds
//     counts only direct dispatches, and must not grow at all), and the
//     broker's durable idempotency log
//     ($SCION_HOME/broker/idempotency/keys.jsonl, one line per command the
//     broker executed) holds exactly 50 agent.stop records, one per agent,
//     all with the queued dispatch's key.
func TestQueuedStopsAcrossBrokerCut(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	b := setupBroker(t, hub, token, "cut")
	thawed := true
	t.Cleanup(func() {
		if !thawed {
			_ = syscall.Kill(b.proc.PID, syscall.SIGCONT)
		}
	})
	queuedStopsScenario(t, hub, admin, token, "cut", b.host, "SIGSTOP",
		func() { b.proc.Signal(t, syscall.SIGSTOP); thawed = false },
		func() { b.proc.Signal(t, syscall.SIGCONT); thawed = true })
}

// queuedStopsScenario is TestQueuedStopsAcrossBrokerCut's body for any
// kind of cut: cut makes the broker unreachable, heal reconnects it. bh is
// the broker's host (its SCION_HOME holds the idempotency log).
func queuedStopsScenario(t *testing.T, hub *hubProc, admin *host, token, brokerName string, bh *host, cutKind string, cut, heal func()) {
	t.Helper()
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{brokerName: api.BrokerOnline}) })
	cl := client.New(hub.URL, token)

	ids := startAgents(t, cl, "q", queuedStops)
	wait.Eventually(t, 10*time.Second, pollInterval, func() error { return wantReserved(cl, queuedStops) })
	stopsBefore := dispatchCount(t, hub.URL, token, "agent.stop")

	// The cut.
	cut()
	cutAt := time.Now()
	detect := wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{brokerName: api.BrokerOffline})
	})
	t.Logf("MEASURED: cut-off broker shown offline %v after the cut (%s)", detect.Round(time.Millisecond), cutKind)

	// Queue the 50 stops, 8 at a time.
	var mu sync.Mutex
	var errs []string
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for name, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			code, a, err := rawAction(hub.URL, token, id, "stop")
			var msg string
			switch {
			case err != nil:
				msg = fmt.Sprintf("stop %s: %v", name, err)
			case code != http.StatusAccepted:
				msg = fmt.Sprintf("stop %s: HTTP %d, want 202 Accepted", name, code)
			case a.ContainerStatus != api.ContainerStopQueued:
				msg = fmt.Sprintf("stop %s: container status %q, want %q", name, a.ContainerStatus, api.ContainerStopQueued)
			case a.QueuedDispatch == nil || a.QueuedDispatch.Action != "stop":
				msg = fmt.Sprintf("stop %s: no queued stop dispatch in the answer: %+v", name, a.QueuedDispatch)
			}
			if msg != "" {
				mu.Lock()
				errs = append(errs, msg)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d stops were not queued: %s", len(errs), queuedStops, strings.Join(errs, "; "))
	}
	if err := wantReserved(cl, queuedStops); err != nil {
		t.Fatalf("after queueing the stops: %v (a stop_queued agent keeps its slot)", err)
	}
	if n := len(queuedAgents(t, cl)); n != queuedStops {
		t.Fatalf("%d agents show stop_queued, want %d", n, queuedStops)
	}
	if got := dispatchCount(t, hub.URL, token, "agent.stop"); got != stopsBefore {
		t.Fatalf("the Hub dispatched %d stops to an offline broker", got-stopsBefore)
	}
	// The queue holds while the broker stays away.
	wait.Consistently(t, 2*hbInterval, pollInterval, func() error { return wantReserved(cl, queuedStops) })

	// Reconnect.
	heal()
	resumed := time.Now()
	var samples int
	drained := wait.Eventually(t, 45*time.Second, pollInterval, func() error {
		r1, err := reserved(cl)
		if err != nil {
			return err
		}
		agents, err := listAgents(cl)
		if err != nil {
			return err
		}
		r2, err := reserved(cl)
		if err != nil {
			return err
		}
		q := 0
		for _, a := range agents {
			if a.ContainerStatus == api.ContainerStopQueued {
				q++
			}
		}
		samples++
		// Reservations and queued stops only go down; read in the order
		// reservations, agents, reservations, r1 >= q >= r2 holds iff a slot
		// is released together with its agent leaving stop_queued.
		if r1 < q || q < r2 {
			t.Fatalf("capacity released out of step with the stops: reservations %d then %d around %d agents still stop_queued", r1, r2, q)
		}
		if q > 0 || r2 > 0 {
			return fmt.Errorf("%d agents still stop_queued, %d reservations", q, r2)
		}
		return nil
	})
	t.Logf("MEASURED: %d queued stops drained %v after the cut healed (%d samples; cut lasted %v)",
		queuedStops, drained.Round(time.Millisecond), samples, resumed.Sub(cutAt).Round(time.Millisecond))
	wait.Eventually(t, offlineBudget, pollInterval, func() error { return admin.brokerStatuses(map[string]string{brokerName: api.BrokerOnline}) })

	agents, err := listAgents(cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != queuedStops {
		t.Fatalf("%d agents after the drain, want %d", len(agents), queuedStops)
	}
	for _, a := range agents {
		if a.Phase != api.PhaseStopped || a.ContainerStatus == api.ContainerStopQueued {
			t.Errorf("agent %s: phase %s, container %q; want stopped with the stop delivered", a.Slug, a.Phase, a.ContainerStatus)
		}
		if a.QueuedDispatch != nil && a.QueuedDispatch.Status != "delivered" {
			t.Errorf("agent %s: queued dispatch %+v, want delivered", a.Slug, a.QueuedDispatch)
		}
	}

	// Each once: give a duplicate delivery time to show, then count.
	wait.Consistently(t, 2*hbInterval, pollInterval, func() error {
		for id, n := range hubDeliveries(t, hub.proc) {
			if n > 1 {
				return fmt.Errorf("the stop of %s delivered %d times", id, n)
			}
		}
		return nil
	})
	delivered := hubDeliveries(t, hub.proc)
	for _, id := range ids {
		if n := delivered[id]; n != 1 {
			t.Errorf("the Hub logged %d deliveries of the queued stop of agent %s, want 1", n, id)
		}
	}
	if len(delivered) != queuedStops {
		t.Errorf("the Hub logged queued deliveries for %d agents, want %d", len(delivered), queuedStops)
	}
	if got := dispatchCount(t, hub.URL, token, "agent.stop") - stopsBefore; got != 0 {
		t.Errorf("the Hub sent %d direct (unqueued) agent.stop dispatches besides the queue", got)
	}
	perAgent := brokerStopRecords(t, bh)
	total := 0
	for id, n := range perAgent {
		total += n
		if n != 1 {
			t.Errorf("the broker executed %d stops of agent %s, want 1", n, id)
		}
	}
	for _, id := range ids {
		if perAgent[id] == 0 {
			t.Errorf("the broker never executed the stop of agent %s", id)
		}
	}
	sumDelivered := 0
	for _, n := range delivered {
		sumDelivered += n
	}
	t.Logf("MEASURED: Hub-logged queued stop deliveries %d for %d agents, broker-executed stops %d for %d agents (want %d and %d)",
		sumDelivered, len(delivered), total, len(perAgent), queuedStops, queuedStops)
	if err := wantReserved(cl, 0); err != nil {
		t.Error(err)
	}
}

// startAgents creates and starts n agents named prefix-NNN, 8 at a time,
// and returns name -> agent ID.
func startAgents(t *testing.T, cl *client.Client, prefix string, n int) map[string]string {
	t.Helper()
	ids := map[string]string{}
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Start: true,
				Command: []string{"sleep", "3600"}})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("create %s: %w", name, err)
				}
				return
			}
			ids[name] = a.ID
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	wait.Eventually(t, 20*time.Second, pollInterval, func() error {
		agents, err := listAgents(cl)
		if err != nil {
			return err
		}
		running := 0
		for _, a := range agents {
			if a.Phase == api.PhaseRunning {
				running++
			}
		}
		if running != n {
			return fmt.Errorf("%d of %d agents running", running, n)
		}
		return nil
	})
	return ids
}

func listAgents(cl *client.Client) ([]api.Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ListAllAgents(ctx, client.AgentFilter{})
}

func queuedAgents(t *testing.T, cl *client.Client) []string {
	t.Helper()
	agents, err := listAgents(cl)
	if err != nil {
		t.Fatal(err)
	}
	var q []string
	for _, a := range agents {
		if a.ContainerStatus == api.ContainerStopQueued {
			q = append(q, a.Slug)
		}
	}
	return q
}

// reserved is the sum of the brokers' runningAgents (capacity slots).
func reserved(cl *client.Client) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bs, err := cl.ListAllBrokers(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range bs {
		n += b.RunningAgents
	}
	return n, nil
}

func wantReserved(cl *client.Client, want int) error {
	n, err := reserved(cl)
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("brokers' runningAgents sum to %d, want %d", n, want)
	}
	return nil
}

// rawAction posts an agent action and returns the HTTP status with the
// decoded agent: the client library hides 200 versus 202.
func rawAction(hubURL, token, agentID, action string) (int, api.Agent, error) {
	var a api.Agent
	req, err := http.NewRequest(http.MethodPost, hubURL+api.Prefix+"/agents/"+agentID+"/"+action+"?project=default", nil)
	if err != nil {
		return 0, a, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, a, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, a, err
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(body, &a); err != nil {
			return resp.StatusCode, a, fmt.Errorf("decode: %v: %s", err, body)
		}
		return resp.StatusCode, a, nil
	}
	return resp.StatusCode, a, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

var dispatchCountRE = regexp.MustCompile(`^scion_dispatch_duration_seconds_count\{([^}]*)\} (\S+)$`)

// dispatchCount sums the Hub's scion_dispatch_duration_seconds_count for
// method over all outcomes: how many commands of that method the Hub sent
// to brokers since it started.
func dispatchCount(t *testing.T, hubURL, token, method string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, hubURL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token) // an admin's: /metrics needs one or a scrape token
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := dispatchCountRE.FindStringSubmatch(sc.Text())
		if m == nil || !strings.Contains(m[1], `method="`+method+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", sc.Text(), err)
		}
		n += int(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return n
}

// brokerStopRecords reads the broker's durable idempotency log and counts,
// per agent ID, the distinct agent.stop keys it executed (a key the broker
// only replayed from its record is not written again; a second line for a
// key, which a compaction may leave, is not a second stop).
func brokerStopRecords(t *testing.T, h *host) map[string]int {
	t.Helper()
	path := filepath.Join(h.home, "broker", "idempotency", "keys.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the broker's idempotency log: %v", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	per := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Key  string          `json:"k"`
			Body json.RawMessage `json:"b"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.Key, "agent.stop\x00") || seen[e.Key] {
			continue
		}
		seen[e.Key] = true
		var st struct {
			AgentID string `json:"agentId"`
		}
		_ = json.Unmarshal(e.Body, &st)
		per[st.AgentID]++
	}
	return per
}

var deliveredRE = regexp.MustCompile(`msg="queued dispatch delivered".* agent_id=(\S+) .*method=agent\.stop`)

// hubDeliveries counts, per agent ID, the Hub's "queued dispatch
// delivered" log lines for agent.stop: one per queued stop whose answer
// the Hub applied.
func hubDeliveries(t *testing.T, p *Proc) map[string]int {
	t.Helper()
	data, err := os.ReadFile(p.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := deliveredRE.FindStringSubmatch(line); m != nil {
			per[m[1]]++
		}
	}
	return per
}
