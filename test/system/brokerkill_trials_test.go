package system

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/scion-go/scion/api"
	scion "github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/process"
)

// Broker kill -9 trials (issue 12, acceptance: "kill -9 of a broker during
// 100 starts on each of the process and Docker runtimes, 10 trials: 0
// orphan processes or containers after the broker restarts and the agents
// are deleted; every keyed retry returns the real outcome").
//
// SCION_BROKER_KILL_TRIALS sets the number of trials per runtime; the
// default is 10 under CI=true, 1 with -short, else 3.
const bkStarts = 100

// bkParallel is how many retries (and deletes) run at once, as a few
// clients retrying would.
const bkParallel = 20

func brokerKillTrials(t *testing.T) int {
	if s := os.Getenv("SCION_BROKER_KILL_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SCION_BROKER_KILL_TRIALS=%q: want a positive number", s)
		}
		return n
	}
	switch {
	case os.Getenv("CI") == "true":
		return 10
	case testing.Short():
		return 1
	}
	return 3
}

// bkRig is one runtime's set-up: a team Hub, its admin client and a
// broker process that the trials kill and restart from the same home.
type bkRig struct {
	cl      *scion.Client
	broker  *brokerHost
	start   func(t *testing.T) // (re)starts the broker process
	command []string           // the agents' command
	// leftovers lists what the runtime still holds of this broker: live
	// processes carrying its marker, or its containers in any state.
	leftovers func(t *testing.T) []string
	// killAfter is when, after the creates are fired, the broker dies.
	killAfter func() time.Duration
}

// TestBrokerKill9TrialsProcess: the process runtime. Each trial fires 100
// keyed creates (start: true) at once and kills the broker with SIGKILL
// while they run; the broker is restarted from the same data directory,
// every create is retried with its Idempotency-Key, then every agent is
// deleted. Asserted per trial:
//   - every retry's answer is the real outcome: a 201 names an agent that
//     exists, with the same ID, and runs on the broker; a refusal leaves
//     no agent of that name; a create acknowledged before the kill is
//     acknowledged again with the same ID;
//   - after the deletes, no live process carries the broker's marker
//     (SCION_PROCESS_STATE_DIR of its state directory) in its environment.
func TestBrokerKill9TrialsProcess(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	rig := bkSetup(t, "process")
	stateDir := filepath.Join(rig.broker.home, "broker", "process")
	rig.command = []string{"sleep", "3600"}
	rig.leftovers = func(t *testing.T) []string { return markedPids(stateDir) }
	rig.killAfter = func() time.Duration { return time.Duration(20+rand.IntN(400)) * time.Millisecond }
	bkRun(t, rig)
}

// TestBrokerKill9TrialsDocker is the same on the Docker Engine: after the
// deletes no container of the broker is left, in any state.
func TestBrokerKill9TrialsDocker(t *testing.T) {
	if runsInBackground(t) {
		return
	}
	cl := requireDocker(t)
	requireDemoImage(t)
	t.Parallel()
	rig := bkSetup(t, "docker")
	rig.command = []string{"scion", "agent-demo", "--stay", "--steps", "0"}
	rig.leftovers = func(t *testing.T) []string { return brokerContainerNames(t, cl, rig.broker.brokerID) }
	rig.killAfter = func() time.Duration { return time.Duration(1000+rand.IntN(11000)) * time.Millisecond }
	cleanupBrokerContainers(t, cl, &rig.broker.brokerID)
	bkRun(t, rig)
}

func bkSetup(t *testing.T, rt string) *bkRig {
	t.Helper()
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	if rt == "docker" {
		admin.mustScion(t, "hub", "settings", "set", "--default-image", docker.DemoImage)
	}
	name := "bk-" + rt
	b := &brokerHost{host: newHost(t, name), brokerName: name}
	b.useHub(t, hub.URL, token)
	var reg registration
	b.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", name)
	b.brokerID = reg.BrokerID
	b.mustScion(t, "runtime-broker", "provide", "--project", "default")
	rig := &bkRig{cl: scion.New(hub.URL, token), broker: b}
	rig.start = func(t *testing.T) {
		b.proc = b.start(t, "broker-"+name, append([]string{"runtime-broker", "start", "--runtime", rt}, hbFlags...)...)
	}
	rig.start(t)
	waitBrokerOnline(t, rig.cl, name)
	return rig
}

// bkOutcome is what one create's answers were.
type bkOutcome struct {
	name, key   string
	first       error
	firstID     string
	retry       error
	retryID     string
	retryStatus int
	unknown     int // retries answered runtime_broker_timeout (outcome not known yet)
}

func bkRun(t *testing.T, rig *bkRig) {
	trials := brokerKillTrials(t)
	began := time.Now()
	var ackedBefore, createdAfter, refusedAfter int
	for trial := 1; trial <= trials; trial++ {
		a, c, r := bkTrial(t, rig, trial)
		ackedBefore += a
		createdAfter += c
		refusedAfter += r
		if t.Failed() {
			break
		}
	}
	t.Logf("MEASURED: %d broker kill -9 trials of %d keyed creates in %v: %d acknowledged before the kill, after the restart %d retries answered created and %d refused; 0 orphans",
		trials, bkStarts, time.Since(began).Round(time.Second), ackedBefore, createdAfter, refusedAfter)
}

func bkTrial(t *testing.T, rig *bkRig, trial int) (ackedBefore, created, refused int) {
	t.Helper()
	outs := make([]*bkOutcome, bkStarts)
	for i := range outs {
		outs[i] = &bkOutcome{name: fmt.Sprintf("k%02d-%03d", trial, i), key: scion.NewIdempotencyKey()}
	}
	req := func(o *bkOutcome) api.CreateAgentRequest {
		return api.CreateAgentRequest{Name: o.name, Project: "default", Start: true, Command: rig.command}
	}

	// 100 keyed creates at once; the broker dies while they run.
	var wg sync.WaitGroup
	fired := time.Now()
	for _, o := range outs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(scion.WithIdempotencyKey(context.Background(), o.key), 60*time.Second)
			defer cancel()
			a, err := rig.cl.CreateAgent(ctx, req(o))
			o.first = err
			if err == nil {
				o.firstID = a.ID
			}
		})
	}
	killAt := rig.killAfter()
	time.Sleep(killAt)
	rig.broker.proc.Kill9(t)
	wg.Wait()
	for _, o := range outs {
		if o.first == nil {
			ackedBefore++
		}
	}
	t.Logf("trial %d: broker killed %v after the creates were fired; %d of %d acknowledged by then or cut off after (all answered %v after firing)",
		trial, killAt, ackedBefore, bkStarts, time.Since(fired).Round(time.Millisecond))

	restarted := time.Now()
	rig.start(t)
	// The engine may still be working through the dead broker's calls
	// (Docker does not cancel a create whose client is gone), so the new
	// broker's first inventory can take a while on a loaded host.
	wait.Eventually(t, 2*time.Minute, pollInterval, func() error { return bkOnline(rig.cl, rig.broker.brokerName) })
	onlineTook := time.Since(restarted)

	// Every create again with its key: the answer must be the real
	// outcome, bkParallel at a time.
	retried := time.Now()
	sem := make(chan struct{}, bkParallel)
	for _, o := range outs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(scion.WithIdempotencyKey(context.Background(), o.key), 2*time.Minute)
			defer cancel()
			a, err := rig.cl.CreateAgent(ctx, req(o))
			// runtime_broker_timeout is the Hub saying the outcome is not
			// known yet ("retry with the same Idempotency-Key to learn
			// it"): on a loaded engine the restarted broker's create can
			// outlast the Hub's dispatch timeout. Retry as told, within
			// the same bound; what finally answers must be the outcome.
			for api.IsCode(err, api.CodeBrokerTimeout) && ctx.Err() == nil {
				o.unknown++
				select { // the Hub may answer the pending key at once: pace
				case <-ctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
				a, err = rig.cl.CreateAgent(ctx, req(o))
			}
			o.retry = err
			if err == nil {
				o.retryID = a.ID
			} else if ae := (*api.Error)(nil); errors.As(err, &ae) {
				o.retryStatus = ae.Status
			}
		})
	}
	wg.Wait()
	retryTook := time.Since(retried)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var bad []string
	for _, o := range outs {
		got, gerr := rig.cl.GetAgent(ctx, o.name, "default")
		exists := gerr == nil
		if gerr != nil && !isNotFoundErr(gerr) {
			t.Fatalf("get %s: %v", o.name, gerr)
		}
		switch {
		case o.retry == nil:
			created++
			if !exists || got.ID != o.retryID {
				bad = append(bad, fmt.Sprintf("%s: retry answered created (%s), but the Hub has %v", o.name, o.retryID, agentOrErr(got, gerr)))
			}
			if o.first == nil && o.firstID != o.retryID {
				bad = append(bad, fmt.Sprintf("%s: acknowledged as %s, the retry as %s", o.name, o.firstID, o.retryID))
			}
		default:
			refused++
			if o.retryStatus >= 500 || o.retryStatus == 0 {
				bad = append(bad, fmt.Sprintf("%s: retry with the broker online answered %v, not an outcome", o.name, o.retry))
			}
			if exists {
				bad = append(bad, fmt.Sprintf("%s: retry answered %v, but the agent exists (%s, phase %s)", o.name, o.retry, got.ID, got.Phase))
			}
			if o.first == nil {
				bad = append(bad, fmt.Sprintf("%s: acknowledged as %s before the kill, the retry answered %v", o.name, o.firstID, o.retry))
			}
		}
	}
	// A created agent runs on the broker (start: true): not just a record.
	if len(bad) == 0 {
		wait.Eventually(t, 90*time.Second, pollInterval, func() error {
			var notRunning []string
			for _, o := range outs {
				if o.retry != nil {
					continue
				}
				a, err := rig.cl.GetAgent(ctx, o.name, "default")
				if err != nil {
					return err
				}
				if a.Phase != api.PhaseRunning {
					notRunning = append(notRunning, o.name+"="+a.Phase+" ("+a.StatusMessage+")")
				}
			}
			if len(notRunning) > 0 {
				return fmt.Errorf("created agents not running: %d, e.g. %v", len(notRunning), notRunning[:min(3, len(notRunning))])
			}
			return nil
		})
	}
	if len(bad) > 0 {
		t.Errorf("trial %d: %d keyed retries do not match the real outcome, e.g.:\n  %s", trial, len(bad), strings.Join(bad[:min(10, len(bad))], "\n  "))
	}

	// Delete every agent the Hub has (whatever the answers said), then
	// nothing of the broker's may be left on the runtime.
	deleted := time.Now()
	bkDeleteAll(t, rig.cl)
	deleteTook := time.Since(deleted)
	var left []string
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		if left = rig.leftovers(t); len(left) > 0 {
			return fmt.Errorf("%d orphans left after every agent was deleted, e.g. %v", len(left), left[:min(5, len(left))])
		}
		return nil
	})
	unknown := 0
	for _, o := range outs {
		unknown += o.unknown
	}
	t.Logf("trial %d: restarted broker online after %v; retries answered created %d, refused %d (in %v, %d answers of not known yet retried); deletes took %v; 0 orphans after the deletes",
		trial, onlineTook.Round(time.Millisecond), created, refused, retryTook.Round(time.Millisecond), unknown, deleteTook.Round(time.Millisecond))
	return ackedBefore, created, refused
}

// bkOnline is nil once the Hub lists the broker online.
func bkOnline(cl *scion.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bs, err := cl.ListAllBrokers(ctx)
	if err != nil {
		return err
	}
	for _, b := range bs {
		if b.Name == name {
			if b.Status == api.BrokerOnline {
				return nil
			}
			return fmt.Errorf("broker %s is %s", name, b.Status)
		}
	}
	return fmt.Errorf("no broker %s", name)
}

func agentOrErr(a *api.Agent, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("agent %s (phase %s)", a.ID, a.Phase)
}

// bkDeleteAll deletes every agent of project default and waits until the
// Hub lists none.
func bkDeleteAll(t *testing.T, cl *scion.Client) {
	t.Helper()
	wait.Eventually(t, 2*time.Minute, pollInterval, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := cl.ListAgents(ctx, scion.AgentFilter{Project: "default"}, "", 1000)
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, bkParallel)
		errs := make([]error, len(l.Items))
		for i, a := range l.Items {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := cl.DeleteAgent(ctx, a.ID, "default"); err != nil && !isNotFoundErr(err) {
					errs[i] = fmt.Errorf("delete %s (%s): %w", a.Slug, a.Phase, err)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return fmt.Errorf("deleted %d agents; checking again", len(l.Items))
	})
}

// markedPids lists the live processes whose environment carries the
// process runtime's marker for stateDir, as "pid cmdline".
func markedPids(stateDir string) []string {
	want := []byte(process.EnvStateDir + "=" + stateDir + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && bytes.HasPrefix(stat[i:], []byte(") Z")) {
			continue // exited, awaiting its reaper
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		out = append(out, e.Name()+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))))
	}
	return out
}

// brokerContainerNames lists the broker's containers on the engine, in
// any state.
func brokerContainerNames(t *testing.T, cl *client.Client, brokerID string) []string {
	var out []string
	for _, c := range listContainers(t, cl, runtime.LabelBrokerID+"="+brokerID) {
		out = append(out, strings.Join(c.Names, ",")+" ("+c.State+")")
	}
	return out
}
