package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
)

// registerRetry is how often a workstation asks its Hub again to register
// an instance it refused (the experiment is off): turning the experiment
// on activates the instance without a restart.
var registerRetry = 30 * time.Second

// workstationInstances are the flat instances of a workstation: they
// register through the Hub in the same process (credentials saved per
// instance, like `scion runtime-broker register --instance`), instead of
// the "local" broker.
type workstationInstances struct {
	srv     *hub.Server
	url     string
	host    *instanceHost
	ins     []config.Instance
	targets []api.RuntimeTarget
	ranges  [][2]int

	mu    sync.Mutex // guards creds and its file
	creds *config.BrokerCredentials

	hosted  []*hostedInstance
	pending []pendingInstance // the instances the Hub refused so far
}

// pendingInstance is an instance the Hub refused: its index and the
// refusal last logged ("code: message").
type pendingInstance struct {
	i       int
	refusal string
}

// startWorkstationInstances registers and prepares the workstation's
// instances. An entry that does not validate refuses the start; an
// instance the Hub refuses is logged as not activated (and asked again
// while the Hub runs), one that cannot serve is logged as refused.
func startWorkstationInstances(ctx context.Context, srv *hub.Server, url string, f *config.ServerOptions, s *config.Settings, creds *config.BrokerCredentials, log *slog.Logger) (*workstationInstances, error) {
	ins, targets, err := parseInstances(s)
	if err != nil {
		return nil, err
	}
	if f.Runtime != "" {
		return nil, usageErrorf("--runtime %s does not apply with server.broker.instances: each instance runs on its runtime_target (drop --runtime)", f.Runtime)
	}
	ranges, err := splitPortRange(broker.DefaultPortRange, max(len(ins), 1))
	if err != nil {
		return nil, err
	}
	gitWS, err := gitWorkspaces(s, true)
	if err != nil {
		return nil, err
	}
	w := &workstationInstances{srv: srv, url: url, ins: ins, targets: targets, ranges: ranges, creds: creds,
		host: &instanceHost{settings: s, hub: url, version: f.Version, heartbeat: f.HeartbeatInterval, grace: f.HeartbeatGrace,
			dataDir: config.Path("broker"), gitWorkspaces: gitWS, log: log, runtime: instanceRuntimeFor}}
	if _, err := srv.EnsureProject(ctx, "default", ""); err != nil {
		return nil, fmt.Errorf("default project: %w", err)
	}
	for i := range ins {
		conn, err := w.register(ctx, i)
		if err != nil {
			if ae := notActivated(err); ae != nil {
				msg := ae.Code + ": " + ae.Message
				log.Error(fmt.Sprintf("instance %s not activated: %s", ins[i].Key, msg), "instance", ins[i].Key)
				w.pending = append(w.pending, pendingInstance{i, msg})
				continue
			}
			return nil, fmt.Errorf("register instance %s: %w", ins[i].Key, err)
		}
		if hi := w.prepare(ctx, i, conn); hi != nil {
			w.hosted = append(w.hosted, hi)
		}
	}
	if w.host.dockerEnv.defaultImage != "" {
		img := w.host.dockerEnv.defaultImage
		if err := srv.EnsureDefaultImage(ctx, func() (string, error) { return img, nil }); err != nil {
			return nil, fmt.Errorf("demo image: %w", err)
		}
	}
	return w, nil
}

// notActivated is the Hub's refusal of a registration that a later
// attempt may not meet (experiment_disabled, say), or nil.
func notActivated(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status == 409 {
		return ae
	}
	return nil
}

// register returns instance i's connection: the saved one while the Hub
// still knows its broker, else a new registration, saved.
func (w *workstationInstances) register(ctx context.Context, i int) (*config.BrokerConnection, error) {
	in := w.ins[i]
	w.mu.Lock()
	defer w.mu.Unlock()
	if conn := w.creds.ForInstance(w.url, in.Key); conn != nil {
		ok, err := w.srv.BrokerExists(ctx, conn.BrokerID)
		if err != nil {
			return nil, err
		}
		if ok {
			return conn, nil
		}
		// The database was reset: register afresh.
	}
	bc, err := w.srv.RegisterFlatBroker(ctx, in.Name, hub.BootstrapAdminID, true, w.targets[i], in.MaxAgents)
	if err != nil {
		return nil, err
	}
	registered := config.RuntimeTarget(w.targets[i])
	conn := &config.BrokerConnection{Name: in.Key, Instance: in.Key, RuntimeTarget: &registered, HubEndpoint: w.url,
		BrokerID: bc.BrokerID, BrokerName: bc.Name, Secret: bc.Secret}
	w.creds.Put(conn)
	if err := w.creds.Save(); err != nil {
		return nil, err
	}
	return conn, nil
}

// prepare links the instance to the default project and builds its
// broker; nil when it cannot serve (logged).
func (w *workstationInstances) prepare(ctx context.Context, i int, conn *config.BrokerConnection) *hostedInstance {
	in := w.ins[i]
	if _, err := w.srv.EnsureProject(ctx, "default", conn.BrokerID); err != nil {
		w.host.log.Error(fmt.Sprintf("instance %s refused: default project: %v", in.Key, err), "instance", in.Key)
		return nil
	}
	hi, err := w.host.prepareOne(ctx, in, w.targets[i], conn, w.ranges[i])
	if err != nil {
		w.host.log.Error(fmt.Sprintf("instance %s refused: %v", in.Key, err), "instance", in.Key)
		return nil
	}
	return hi
}

// run serves the instances until ctx ends, asking the Hub again every
// registerRetry for those it refused.
func (w *workstationInstances) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { runInstances(ctx, w.hosted, w.host.log) })
	for _, p := range w.pending {
		wg.Go(func() { w.retry(ctx, p) })
	}
	wg.Wait()
}

// retry registers a pending instance once the Hub accepts it, then
// serves it; a changed refusal is logged, a repeated one is not.
func (w *workstationInstances) retry(ctx context.Context, p pendingInstance) {
	i, last := p.i, p.refusal
	in := w.ins[i]
	for {
		t := time.NewTimer(registerRetry/2 + time.Duration(rand.Float64()*float64(registerRetry/2)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		conn, err := w.register(ctx, i)
		if err != nil {
			ae := notActivated(err)
			if ae == nil {
				w.host.log.Error(fmt.Sprintf("instance %s refused: register: %v", in.Key, err), "instance", in.Key)
				return
			}
			if msg := ae.Code + ": " + ae.Message; msg != last {
				w.host.log.Error(fmt.Sprintf("instance %s not activated: %s", in.Key, msg), "instance", in.Key)
				last = msg
			}
			continue
		}
		w.host.log.Info(fmt.Sprintf("instance %s activated", in.Key), "instance", in.Key, "broker_id", conn.BrokerID)
		if hi := w.prepare(ctx, i, conn); hi != nil {
			runInstances(ctx, []*hostedInstance{hi}, w.host.log)
		}
		return
	}
}

// workstationFile is the workstation's record for the CLI: with instances
// it names no local broker.
func workstationFile(url, token string) *config.Workstation {
	return &config.Workstation{URL: url, AdminToken: token, PID: os.Getpid()}
}
