package system

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/wait"
)

// Mixed-load kill -9 trials (issue 5: "200 trials of kill -9 of the Hub at
// random moments during mixed create/start/stop load: no acknowledged
// operation lost, no duplicate container, reservations equal running
// agents after each trial"). SCION_KILL_TRIALS sets the number of trials;
// the default keeps CI fast.
const (
	defaultKillTrials = 20
	k9Workers         = 6
	k9MaxPerWorker    = 12 // at this many agents a worker deletes stopped ones instead of creating (the broker's default limit is 100 running)
)

// k9Agent is the test's model of one agent: what the last operation on it
// leaves it as, if that operation was acknowledged.
type k9Agent struct {
	name string
	id   string // "" until a create was acknowledged (or found after a crash)
	// want: "running" or "stopped" after an acknowledged operation;
	// "?" after one that failed (it may or may not have happened);
	// "ignore" for an agent in a phase the load no longer touches.
	want    string
	created bool // a create for it was acknowledged
	maybe   bool // its create failed: it may or may not exist
	deleted bool // a delete of it was acknowledged
	delTry  bool // a delete of it was sent
	ackedIn int  // the trial of its last acknowledged operation
	ackedAt time.Time
	// adopted: want was not set by an acknowledgement but taken from what
	// the Hub showed after a restart (the last operation was not acked).
	adopted bool
}

// k9Counts are one trial's (and the totals') figures.
type k9Counts struct {
	creates, createsAcked, starts, startsAcked, stops, stopsAcked int
	deletes, deletesAcked, deleteRetries                          int
	checkedRunning, checkedStopped, agents, running, inventory    int
	lost, dup, wrongState, orphans                                int
}

func (c *k9Counts) add(o k9Counts) {
	c.creates += o.creates
	c.createsAcked += o.createsAcked
	c.starts += o.starts
	c.startsAcked += o.startsAcked
	c.stops += o.stops
	c.stopsAcked += o.stopsAcked
	c.deletes += o.deletes
	c.deletesAcked += o.deletesAcked
	c.deleteRetries += o.deleteRetries
	c.checkedRunning += o.checkedRunning
	c.checkedStopped += o.checkedStopped
	c.lost += o.lost
	c.dup += o.dup
	c.wrongState += o.wrongState
	c.orphans += o.orphans
}

func (c k9Counts) String() string {
	return fmt.Sprintf("creates %d (acked %d), starts %d (acked %d), stops %d (acked %d), deletes %d (acked %d, unacked ones retried after the restart %d); verified state (acked, or adopted from the Hub after an unacked op): running %d, stopped %d; "+
		"lost %d, duplicate %d, wrong state %d, orphan containers %d",
		c.creates, c.createsAcked, c.starts, c.startsAcked, c.stops, c.stopsAcked, c.deletes, c.deletesAcked, c.deleteRetries, c.checkedRunning, c.checkedStopped,
		c.lost, c.dup, c.wrongState, c.orphans)
}

// TestHubKill9Trials: a team Hub (SQLite) and a separate broker with the
// fake runtime (whose containers survive the Hub: the broker process stays
// up) under mixed create/start/stop load from 6 clients; in each trial the
// Hub is killed with SIGKILL at a random moment (50-800 ms into the load)
// and restarted on the same database and port. Once the broker is back
// online:
//   - every acknowledged create exists, once, with the acknowledged ID;
//   - every agent whose last operation was acknowledged is in the state it
//     left (a start: running; a stop: stopped, or stop_queued);
//   - no duplicate container: no agent name twice, and the Hub flags no
//     container it has no agent for ("reports a container the hub has no
//     agent for" in its log after the broker's inventory); the broker's
//     inventory size (logged by the Hub at "broker online") never exceeds
//     the agents;
//   - reservations (sum of runningAgents) equal the running agents.
func TestHubKill9Trials(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	trials := defaultKillTrials
	if s := os.Getenv("SCION_KILL_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SCION_KILL_TRIALS=%q: want a positive number", s)
		}
		trials = n
	}
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	b := setupBroker(t, hub, token, "k9")
	cl := client.New(hub.URL, token)
	waitBrokerOnline(t, cl, "k9")

	workers := make([][]*k9Agent, k9Workers)
	var total k9Counts
	start := time.Now()
	ran := 0
	for trial := 1; trial <= trials; trial++ {
		ran = trial
		c := k9Trial(t, trial, hub, cl, workers)
		total.add(c)
		t.Logf("trial %d: %v; after restart: %d agents, %d running, broker inventory %d", trial, c, c.agents, c.running, c.inventory)
		if t.Failed() {
			break
		}
		if b.proc.Exited() {
			t.Fatalf("the broker exited during trial %d: %v", trial, b.proc.ExitErr())
		}
	}
	t.Logf("MEASURED: %d kill -9 trials (of %d asked) in %v: %v", ran, trials, time.Since(start).Round(time.Second), total)
}

func k9Trial(t *testing.T, trial int, hub *hubProc, cl *client.Client, workers [][]*k9Agent) k9Counts {
	t.Helper()
	var c k9Counts
	var mu sync.Mutex // guards c during the load
	var dead atomic.Bool
	killAfter := time.Duration(50+rand.IntN(750)) * time.Millisecond
	var killedNs atomic.Int64
	victim := hub.proc // hub.proc is replaced by the restart below
	killer := time.AfterFunc(killAfter, func() {
		// Marked first: an operation failing from here on may have met
		// the kill, and is not an error of the Hub under load.
		dead.Store(true)
		killedNs.Store(time.Now().UnixNano())
		victim.kill(syscall.SIGKILL)
	})
	defer killer.Stop()

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(trial), uint64(w)))
			n := 0
			for !dead.Load() {
				n++
				live := 0
				for _, a := range workers[w] {
					if !a.delTry {
						live++
					}
				}
				op, a := k9Pick(rng, workers[w], live < k9MaxPerWorker)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				switch op {
				case "create":
					a = &k9Agent{name: fmt.Sprintf("t%03d-w%d-%03d", trial, w, n)}
					got, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: a.name, Project: "default", Start: true,
						Command: []string{"sleep", "3600"}})
					if err == nil {
						a.id, a.want, a.created = got.ID, "running", true
						a.ackedIn, a.ackedAt = trial, time.Now()
					} else {
						a.want, a.maybe = "?", true
					}
					workers[w] = append(workers[w], a)
					mu.Lock()
					c.creates++
					if err == nil {
						c.createsAcked++
					}
					mu.Unlock()
				case "start", "stop":
					_, err := cl.AgentAction(ctx, a.id, "default", op)
					mu.Lock()
					if op == "start" {
						c.starts++
					} else {
						c.stops++
					}
					if err == nil {
						a.ackedIn, a.ackedAt, a.adopted = trial, time.Now(), false
						if op == "start" {
							c.startsAcked++
							a.want = "running"
						} else {
							c.stopsAcked++
							a.want = "stopped"
						}
					} else {
						a.want = "?"
						if !dead.Load() {
							t.Errorf("trial %d: %s %s while the Hub was up: %v", trial, op, a.name, err)
						}
					}
					mu.Unlock()
				case "delete":
					a.delTry = true
					err := cl.DeleteAgent(ctx, a.id, "default")
					mu.Lock()
					c.deletes++
					if err == nil {
						c.deletesAcked++
						a.deleted = true
					} else if !dead.Load() {
						t.Errorf("trial %d: delete %s while the Hub was up: %v", trial, a.name, err)
					}
					a.want = "?"
					mu.Unlock()
				case "idle":
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	victim.WaitExit(t, 10*time.Second)
	killedAt := time.Unix(0, killedNs.Load())

	hub.restart(t)
	waitBrokerOnline(t, cl, "k9")
	checkReservations(t, cl)
	agents, err := listAgents(cl)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]api.Agent{}
	for _, a := range agents {
		byName[a.Slug] = append(byName[a.Slug], a)
		if a.Phase == api.PhaseRunning {
			c.running++
		}
	}
	c.agents = len(agents)
	for name, as := range byName {
		if len(as) > 1 {
			c.dup++
			t.Errorf("trial %d: agent %s exists %d times", trial, name, len(as))
		}
	}
	for w := range workers {
		kept := workers[w][:0]
		for _, m := range workers[w] {
			as := byName[m.name]
			if m.deleted {
				if len(as) > 0 {
					c.lost++
					t.Errorf("trial %d: the acknowledged delete of %s (%s) is lost: it is back as %s (phase %s)", trial, m.name, m.id, as[0].ID, as[0].Phase)
				}
				continue
			}
			if len(as) == 0 {
				if m.created && !m.delTry { // an unacknowledged delete may have removed it
					c.lost++
					t.Errorf("trial %d: the acknowledged create of %s (%s) is gone", trial, m.name, m.id)
				}
				continue // a failed create that never happened: forget it
			}
			a := as[0]
			if m.created && a.ID != m.id {
				c.lost++
				t.Errorf("trial %d: %s was acknowledged as %s, now it is %s", trial, m.name, m.id, a.ID)
			}
			m.id = a.ID
			if m.delTry {
				// An unacknowledged delete: the client retries it, which
				// must work whether or not the broker removed the container.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := cl.DeleteAgent(ctx, a.ID, "default")
				cancel()
				c.deleteRetries++
				if err != nil && !isNotFoundErr(err) {
					t.Errorf("trial %d: retrying the unacknowledged delete of %s (phase %s, container %q): %v",
						trial, m.name, a.Phase, a.ContainerStatus, err)
				}
				continue
			}
			switch m.want {
			case "running":
				c.checkedRunning++
				if a.Phase != api.PhaseRunning {
					c.wrongState++
					t.Errorf("trial %d: ACKNOWLEDGED OPERATION LOST: agent %s (%s, state adopted from the Hub rather than acked: %v): its last acknowledged operation (trial %d, %s, Hub killed %v later) left it running, now phase %s (container %q, %q)",
						trial, m.name, m.id, m.adopted, m.ackedIn, m.ackedAt.Format(time.RFC3339Nano), killedAt.Sub(m.ackedAt).Round(time.Millisecond), a.Phase, a.ContainerStatus, a.StatusMessage)
				}
			case "stopped":
				c.checkedStopped++
				if a.Phase != api.PhaseStopped {
					c.wrongState++
					t.Errorf("trial %d: ACKNOWLEDGED OPERATION LOST: agent %s (%s, state adopted from the Hub rather than acked: %v): its last acknowledged operation (a stop in trial %d at %s, Hub killed %v later) stopped it, now phase %s (container %q, %q)",
						trial, m.name, m.id, m.adopted, m.ackedIn, m.ackedAt.Format(time.RFC3339Nano), killedAt.Sub(m.ackedAt).Round(time.Millisecond), a.Phase, a.ContainerStatus, a.StatusMessage)
				}
			}
			// Adopt what the Hub shows for the next trial.
			if m.want == "?" {
				m.adopted = true
			}
			switch {
			case a.Phase == api.PhaseRunning && a.ContainerStatus == api.ContainerRunning:
				m.want = "running"
			case a.Phase == api.PhaseStopped && a.ContainerStatus != api.ContainerStopQueued:
				m.want = "stopped"
			default:
				m.want = "ignore"
			}
			m.created, m.maybe, m.delTry = true, false, false
			kept = append(kept, m)
		}
		workers[w] = kept
	}
	c.orphans, c.inventory = hubInventoryLog(t, hub.proc)
	if c.orphans > 0 {
		t.Errorf("trial %d: the Hub flagged %d containers it has no agent for (a create it lost, or a duplicate)", trial, c.orphans)
	}
	if c.inventory > c.agents {
		t.Errorf("trial %d: the broker reports %d containers for %d agents", trial, c.inventory, c.agents)
	}
	return c
}

// k9Pick chooses the next operation of a worker: a create (while it may;
// else now and then a delete of a stopped agent, to make room), or a
// start of a stopped agent or a stop of a running one.
func k9Pick(rng *rand.Rand, own []*k9Agent, mayCreate bool) (string, *k9Agent) {
	var running, stopped []*k9Agent
	for _, a := range own {
		if a.delTry {
			continue
		}
		switch a.want {
		case "running":
			running = append(running, a)
		case "stopped":
			stopped = append(stopped, a)
		}
	}
	r := rng.IntN(10)
	switch {
	case mayCreate && r < 4:
		return "create", nil
	case !mayCreate && r < 2 && len(stopped) > 0:
		return "delete", stopped[rng.IntN(len(stopped))]
	case r < 7 && len(running) > 0:
		return "stop", running[rng.IntN(len(running))]
	case len(stopped) > 0:
		return "start", stopped[rng.IntN(len(stopped))]
	case len(running) > 0:
		return "stop", running[rng.IntN(len(running))]
	case mayCreate:
		return "create", nil
	}
	return "idle", nil
}

var inventoryRE = regexp.MustCompile(`msg="broker online".* inventory=(\d+)`)

// hubInventoryLog reads the Hub's log: how many containers it flagged as
// having no agent, and the size of the last inventory a broker reported.
func hubInventoryLog(t *testing.T, p *Proc) (orphans, inventory int) {
	t.Helper()
	data, err := os.ReadFile(p.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	orphans = strings.Count(s, "reports a container the hub has no agent for")
	inventory = -1
	for _, m := range inventoryRE.FindAllStringSubmatch(s, -1) {
		inventory, _ = strconv.Atoi(m[1])
	}
	if inventory < 0 {
		t.Fatalf("the Hub never logged the broker's inventory (\"broker online ... inventory=N\")")
	}
	return orphans, inventory
}

// waitBrokerOnline waits until the Hub lists the broker name online.
func waitBrokerOnline(t *testing.T, cl *client.Client, name string) time.Duration {
	t.Helper()
	return wait.Eventually(t, hubRestartBudget, pollInterval, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		bs, err := cl.ListAllBrokers(ctx)
		if err != nil {
			return err
		}
		var st []string
		for _, b := range bs {
			if b.Name == name && b.Status == api.BrokerOnline {
				return nil
			}
			st = append(st, b.Name+"="+b.Status)
		}
		sort.Strings(st)
		return fmt.Errorf("broker %s not online: %v", name, st)
	})
}

func isNotFoundErr(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}
