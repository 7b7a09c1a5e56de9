package broker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"
)

// job.run: the cluster a Job goes to, the spoke opened with broker-scoped
// secrets, the answer.

// target is where a job.run goes: a fleet cluster, or the ambient one.
type target struct {
	cluster *fleet.Cluster // nil: ambient
}

// resolveCluster picks a Job's cluster: the one it names, else its
// profile's jobs.cluster, else the ambient cluster when the broker has
// one. A cluster the profile's fleet does not offer is refused exactly
// like one that exists nowhere (cluster_not_found, one message shape):
// an agent learns nothing about other profiles' spokes.
func resolveCluster(f *fleet.Fleet, requested, profileCluster string, hasAmbient bool, brokerID string) (target, error) {
	name := cmp.Or(requested, profileCluster)
	if name == "" {
		if hasAmbient {
			return target{}, nil
		}
		return target{}, api.NotFound(api.CodeClusterNotFound, "no cluster named and runtime broker %s has no ambient cluster (offered: %s)", brokerID, offered(f, hasAmbient))
	}
	if c, ok := f.Clusters[name]; ok {
		return target{cluster: c}, nil
	}
	if name == connect.AmbientCluster && hasAmbient {
		return target{}, nil
	}
	return target{}, api.NotFound(api.CodeClusterNotFound, "cluster %q is not offered to this agent by runtime broker %s (offered: %s)", name, brokerID, offered(f, hasAmbient))
}

func offered(f *fleet.Fleet, hasAmbient bool) string {
	names := f.Names()
	if hasAmbient && f.Clusters[connect.AmbientCluster] == nil {
		names = append(names, connect.AmbientCluster)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// secrets reads broker-scoped Hub secrets with the broker's credentials.
func (b *Broker) secrets(ctx context.Context, name string) (string, error) {
	if f := b.jobs.cfg.Secrets; f != nil {
		return f(ctx, name)
	}
	hc := b.cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return wire.FetchBrokerSecret(ctx, hc, b.cfg.HubEndpoint, b.cfg.BrokerID, b.cfg.Secret, name)
}

// jobLog is the logger of one Job's lines.
func (b *Broker) jobLog(cluster, jobID string) *slog.Logger {
	return b.log.With("cluster", cluster, "job", jobID)
}

// handleJobRun answers job.run: the refusals mean nothing was submitted.
func (b *Broker) handleJobRun(ctx context.Context, req *wire.Request) (any, error) {
	js := b.jobs
	var run wire.JobRun
	if err := req.Decode(&run); err != nil {
		return nil, api.BadRequest("%s: %v", req.Method, err)
	}
	j := run.Job
	if err := workspace.ValidID("job ID", j.ID); err != nil {
		return nil, err
	}
	if err := workspace.ValidID("agent ID", j.AgentID); err != nil {
		return nil, err
	}
	if err := runRequest(run).Validate(); err != nil { // the rule the Hub applied: a forged or older Hub's run
		return nil, api.BadRequest("%s: job %s: %s", req.Method, j.ID, api.AsError(err).Message)
	}
	// A retried job.run (the Hub lost the answer) is answered again,
	// not run twice.
	if rj := js.get(j.ID); rj != nil {
		return accepted(rj.spec), nil
	}
	st, err := b.rt.Inspect(ctx, j.AgentID)
	if err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			return nil, api.NotFound(api.CodeAgentNotFound, "agent %s is not run by runtime broker %s", j.AgentID, b.cfg.BrokerID)
		}
		return nil, b.opError(req.Method, j.AgentID, err)
	}
	// The profile whose fleet the Job may use is the agent's own, as the
	// broker labelled it at create: a job.run naming another (a forged or
	// wrong Hub) must not reach that profile's spokes. A runtime that
	// reports no labels leaves the Hub's word.
	if st.Labels != nil && st.Labels[runtime.LabelProfile] != run.Profile {
		return nil, api.BadRequest("%s: profile %q is not the profile of agent %s on runtime broker %s", req.Method, run.Profile, j.AgentID, b.cfg.BrokerID)
	}
	f, profileCluster := js.base, ""
	if run.Profile != "" {
		pf, ok := js.profiles[run.Profile]
		if !ok {
			return nil, api.BadRequest("profile %q is not a profile of runtime broker %s", run.Profile, b.cfg.BrokerID)
		}
		f = pf.fleet
		if pf.settings.Jobs != nil {
			profileCluster = pf.settings.Jobs.Cluster
		}
	}
	tg, err := resolveCluster(f, j.Cluster, profileCluster, js.cfg.Ambient != nil, b.cfg.BrokerID)
	if err != nil {
		return nil, err
	}
	sp, err := b.openSpoke(ctx, tg.cluster)
	if err != nil {
		return nil, err
	}
	spec := specFor(run, sp, b.cfg.BrokerID)
	// Refused now, not in the submit after the run was accepted: the
	// cluster's namespace and default queue join the run here.
	if err := jobs.Validate(spec); err != nil {
		return nil, err
	}
	rj, fresh := js.add(b.runCtx, spec, sp)
	if fresh {
		b.jobLog(spec.Cluster, spec.JobID).Info("job accepted", "tier", spec.Tier, "namespace", spec.Namespace, "agent", spec.AgentID)
		js.marks.mark(spec.Cluster, spec.Tier, spec.Namespace, spec.JobID)
		if !js.goJob(func() { b.runJob(rj, true) }) {
			js.remove(rj)
			js.marks.clear(spec.JobID)
			return nil, api.Errorf(api.CodeBrokerUnavailable, "runtime broker %s is stopping", b.cfg.BrokerID)
		}
	}
	return accepted(rj.spec), nil
}

// openSpoke opens a fleet cluster (nil: the ambient one). A secret the
// Hub does not have is its secret_not_found; any other failure (a
// kubeconfig that does not load, a bad key) is invalid_request naming the
// cluster, never the secret's value.
func (b *Broker) openSpoke(ctx context.Context, c *fleet.Cluster) (*connect.Spoke, error) {
	js := b.jobs
	var sp *connect.Spoke
	var err error
	if c == nil {
		sp, err = js.cfg.Spokes.Ambient(js.cfg.Ambient, js.cfg.AmbientNamespace)
	} else {
		sp, err = js.cfg.Spokes.Open(ctx, c, b.secrets)
	}
	if err != nil {
		msg := api.RedactURLs(err.Error())
		if ae := (*api.Error)(nil); errors.As(err, &ae) {
			return nil, api.Errorf(ae.Code, "%s", msg)
		}
		if ctx.Err() != nil {
			return nil, workspace.ContextError(ctx.Err())
		}
		return nil, api.BadRequest("%s", msg)
	}
	for _, w := range sp.Warnings {
		b.log.Warn(w, "cluster", sp.Name())
	}
	return sp, nil
}

// runRequest is the request a job.run carries, for the shared check.
func runRequest(run wire.JobRun) *api.JobRunRequest {
	j := run.Job
	return &api.JobRunRequest{Cluster: j.Cluster, Image: j.Image, Command: j.Command, GPUs: j.GPUs, Queue: j.Queue,
		DeadlineSeconds: j.DeadlineSeconds, Env: run.Env}
}

// specFor is the runner's Spec of a job.run on spoke sp.
func specFor(run wire.JobRun, sp *connect.Spoke, brokerID string) jobs.Spec {
	j := run.Job
	queue := j.Queue
	if queue == "" && sp.Cluster != nil {
		queue = sp.Cluster.Queue
	}
	deadline := time.Duration(j.DeadlineSeconds) * time.Second
	if deadline <= 0 {
		deadline = api.DefaultJobDeadline
	}
	s := jobs.Spec{JobID: j.ID, AgentID: j.AgentID, BrokerID: brokerID, Cluster: sp.Name(), Tier: string(sp.Tier),
		Namespace: sp.Namespace, Queue: queue, Image: j.Image, Command: j.Command, Env: run.Env, GPUs: j.GPUs,
		Deadline: deadline}
	if c := sp.Cluster; c != nil {
		s.RunAsUser, s.RunAsGroup = c.RunAsUser, c.RunAsGroup
	}
	return s
}

func accepted(s jobs.Spec) wire.JobAccepted {
	return wire.JobAccepted{Cluster: s.Cluster, Tier: s.Tier, Namespace: s.Namespace, Name: jobs.Name(s.JobID), Queue: s.Queue}
}
