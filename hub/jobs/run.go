package jobs

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// jobRunTimeout bounds job.run: the broker resolves the cluster and
// fetches its secrets from this Hub before it answers, so it is longer
// than a plain command and not the request's to cut short.
const jobRunTimeout = 30 * time.Second

func (s *Service) jobRunTimeout() time.Duration {
	if d := s.runWait.Load(); d > 0 {
		return time.Duration(d)
	}
	return jobRunTimeout
}

// pendingJobTTL is how old a pending row must be at Hub start to be
// declared lost: older than any job.run can wait for its answer.
const pendingJobTTL = 5 * time.Minute

// msgHubRestarted is the error of a Job whose run the Hub never saw
// answered.
const msgHubRestarted = "the Hub restarted before the runtime broker answered the run; whether the Job was submitted is unknown"

// msgCancelledUnfollowed is the message of a Job cancelled that its
// broker did not follow.
const msgCancelledUnfollowed = "cancelled; its runtime broker was not following it"

// cancelInLedger ends non-final Job j as cancelled in the ledger alone.
func (s *Service) cancelInLedger(ctx context.Context, c *authz.Caller, j *store.Job, msg string) (int, any, error) {
	out, err := s.store.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
		if x.State.Terminal() {
			return errJobUnchanged
		}
		now := time.Now().UTC()
		x.State, x.Message, x.FinishedAt = api.JobStateCancelled, msg, &now
		return nil
	})
	switch {
	case errors.Is(err, errJobUnchanged):
		if out, err = s.store.GetJob(ctx, j.ID); err != nil {
			return 0, nil, storeerr.Map(err, api.CodeJobNotFound, "job")
		}
		return http.StatusOK, jobView(out), nil
	case err != nil:
		return 0, nil, storeerr.Map(err, api.CodeJobNotFound, "job")
	}
	s.log.Info("job cancelled in the ledger", "job", j.ID, "cluster", cmpCluster(j.Cluster), "reason", msg, "by", c.Principal())
	s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(j.Cluster), string(api.JobStateCancelled)).Inc()
	return http.StatusOK, jobView(out), nil
}

// jobRunKey and jobCancelKey are the idempotency keys of a Job's
// commands: the Job's ID names each once (a Job runs once and is
// cancelled once), so a command whose answer was lost is resent on the
// broker's next session and answered from its record, not run twice.
func jobRunKey(id string) string    { return "job.run:" + id }
func jobCancelKey(id string) string { return "job.cancel:" + id }

// msgCancelledPending is the message of a Job cancelled before its
// broker answered the run.
const msgCancelledPending = "cancelled before the runtime broker answered the run"

// handleRunJob is POST /agents/{agent}/jobs: check, the pending row, the
// broker's job.run, and what its answer says.
func (s *Service) handleRunJob(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	a, err := s.hub.LoadAgent(ctx, c, r, authz.AgentLifecycle)
	if err != nil {
		return 0, nil, err
	}
	var req api.JobRunRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := validateJobRun(&req); err != nil {
		return 0, nil, err
	}
	b, err := s.jobBroker(ctx, a)
	if err != nil {
		return 0, nil, err
	}
	now := time.Now().UTC()
	j := &store.Job{ID: httpapi.NewID(), ProjectID: a.ProjectID, AgentID: a.ID, BrokerID: b.ID, Cluster: req.Cluster,
		Image: req.Image, Command: req.Command, GPUs: req.GPUs, Queue: req.Queue, DeadlineSeconds: req.DeadlineSeconds,
		State: api.JobStatePending, CreatedBy: c.Principal(), CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateJob(ctx, j); err != nil {
		return 0, nil, storeerr.Map(err, api.CodeProjectNotFound, "project")
	}
	// From here the row exists: the client going away must not leave it
	// pending, so the rest runs to its end on its own deadline.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.jobRunTimeout())
	defer cancel()
	var acc wire.JobAccepted
	// Settled, not plain dispatch: a run whose answer was lost would
	// otherwise end as an error while its Job may run on the spoke.
	derr := s.hub.DispatchSettled(wctx, b.ID, wire.MethodJobRun, wire.JobRun{Job: jobView(j), Profile: a.Profile, Env: req.Env}, &acc, jobRunKey(j.ID))
	run := jobRun{job: j, broker: b, requested: cmpCluster(req.Cluster),
		log: s.log.With("job", j.ID, "cluster", cmpCluster(req.Cluster), "agent_id", a.ID, "broker_id", b.ID)}
	switch {
	case derr == nil:
		return s.jobRunAccepted(wctx, c, run, &acc)
	case plan.AnswerLost(derr):
		return s.jobRunUnanswered(context.WithoutCancel(ctx), run, derr)
	}
	// The broker refused: nothing was submitted, and the ledger keeps no
	// row of it.
	if err := s.store.DeleteJob(context.WithoutCancel(ctx), j.ID); err != nil && !isNotFound(err) {
		run.log.Error("deleting a refused job's row", "err", err)
	}
	run.log.Info("job refused by the runtime broker", "code", api.AsError(derr).Code, "err", derr)
	s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(req.Cluster), "refused").Inc()
	return 0, nil, derr
}

// jobRun is one run's row as written, its broker, the cluster asked for
// and the log of its lines.
type jobRun struct {
	job       *store.Job
	broker    *store.Broker
	requested string
	log       *slog.Logger
}

// jobRunUnanswered records a run whose answer was lost (derr): the Job
// is in error, unless its broker reported it meanwhile (it is on its
// spoke: that is its state) or it was cancelled.
func (s *Service) jobRunUnanswered(ctx context.Context, run jobRun, derr error) (int, any, error) {
	msg := cleanText(api.AsError(derr).Message, maxJobMessage)
	_, uerr := s.store.UpdateJobWith(ctx, run.job.ID, func(x *store.Job) error {
		if x.State != api.JobStatePending {
			return errJobUnchanged
		}
		x.State, x.Message = api.JobStateError, msg
		x.Error = &api.JobError{Status: "error", Cluster: run.requested, Message: msg}
		return nil
	})
	if errors.Is(uerr, errJobUnchanged) {
		cur, err := s.store.GetJob(ctx, run.job.ID)
		if err == nil && cur.State != api.JobStateCancelled {
			run.log.Info("job run not answered but reported by its broker", "state", cur.State, "err", derr)
			return http.StatusCreated, jobView(cur), nil
		}
		run.log.Warn("job run not answered by the runtime broker; it was cancelled meanwhile", "err", derr)
		return 0, nil, derr // counted as cancelled already
	}
	if uerr != nil {
		run.log.Error("marking a job whose run was not answered", "err", uerr)
	}
	run.log.Warn("job run not answered by the runtime broker", "err", derr)
	s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(run.job.Cluster), string(api.JobStateError)).Inc()
	return 0, nil, derr
}

// jobRunAccepted records what the broker accepted (acc): where the Job
// runs and its queue. A Job the ledger ended while the broker answered
// (cancelled, expired) is cancelled on its spoke now that the broker
// follows it.
func (s *Service) jobRunAccepted(ctx context.Context, c *authz.Caller, run jobRun, acc *wire.JobAccepted) (int, any, error) {
	wctx := context.WithoutCancel(ctx)
	out, err := s.store.UpdateJobWith(wctx, run.job.ID, func(x *store.Job) error {
		x.Cluster, x.Tier, x.Namespace, x.Name = clip(acc.Cluster, 63), clip(acc.Tier, 32), clip(acc.Namespace, 63), clip(acc.Name, 253)
		fillQueue(x, acc)
		return nil
	})
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeJobNotFound, "job")
	}
	s.metrics.learnCluster(out.Cluster)
	if out.State.Terminal() {
		if err := s.hub.Dispatch(ctx, run.broker.ID, wire.MethodJobCancel, wire.JobRef{JobID: out.ID}, nil, jobCancelKey(out.ID)); err != nil {
			run.log.Warn("cancelling a job accepted after the ledger ended it", "state", out.State, "err", err)
		} else {
			run.log.Info("job accepted after the ledger ended it; cancel sent", "state", out.State)
		}
		return http.StatusCreated, jobView(out), nil
	}
	s.log.Info("job accepted", "job", out.ID, "cluster", out.Cluster, "tier", out.Tier, "agent_id", out.AgentID, "broker_id", run.broker.ID, "by", c.Principal())
	return http.StatusCreated, jobView(out), nil
}

// fillQueue records the queue the broker resolved (the cluster block's
// default when the run named none) in a row that has none: `job show`
// then names the queue the Job waits in. A name that is no queue name is
// dropped, not stored.
func fillQueue(j *store.Job, w *wire.JobAccepted) {
	if j.Queue == "" && w != nil && w.Queue != "" && api.CheckJobQueue(w.Queue) == nil {
		j.Queue = w.Queue
	}
}

// cmpCluster names a requested cluster for logs and metrics: "" is the
// profile's (resolved by the broker).
func cmpCluster(c string) string {
	if c == "" {
		return "(profile)"
	}
	return c
}

// clip cuts a broker's name to n bytes, on a rune boundary, as
// cleanText: a cut mid-rune is invalid UTF-8, which PostgreSQL's text
// refuses.
func clip(s string, n int) string { return cleanText(s, n) }

// jobBroker is the broker that runs agent a's Jobs: its own, reachable
// (plan.Reach), connected and able to (wire.CapJobs).
func (s *Service) jobBroker(ctx context.Context, a *store.Agent) (*store.Broker, error) {
	reach, err := s.hub.LoadReach(ctx, a)
	if err != nil {
		return nil, err
	}
	if err := plan.Reach(reach); err != nil {
		return nil, err
	}
	b := reach.Broker
	if !s.hub.BrokerOnline(b.ID) {
		return nil, api.Errorf(api.CodeBrokerOffline, "agent %q's runtime broker %q is offline; try again when it reconnects", a.Slug, b.Name)
	}
	if !slices.Contains(b.Capabilities, wire.CapJobs) {
		return nil, api.Errorf(api.CodeUnsupportedOperation,
			"agent %q's runtime broker %q does not run delegated Jobs (it does not announce the %q capability); upgrade it and give its profile a jobs cluster",
			a.Slug, b.Name, wire.CapJobs)
	}
	return b, nil
}

// pendingJobSweepEvery is how often a running Hub expires lost runs: at
// its start it can only take rows older than pendingJobTTL (a younger one
// may be another replica's run in flight), so a Hub killed and restarted
// within that time would leave its rows pending for ever.
const pendingJobSweepEvery = time.Minute

// unreportedSweepRatio: one sweep in this many also expires accepted
// Jobs never reported (acceptedPendingTTL).
const unreportedSweepRatio = 10

// SweepPending expires lost runs every pendingJobSweepEvery until the
// Hub closes (the Hub runs it in the background).
func (s *Service) SweepPending() {
	done := s.systemCtx().Done()
	for n := 1; ; n++ {
		every := pendingJobSweepEvery
		if d := s.sweepWait.Load(); d > 0 {
			every = time.Duration(d)
		}
		t := time.NewTimer(every)
		select {
		case <-done:
			t.Stop()
			return
		case <-s.sweepWake:
			t.Stop()
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.systemCtx(), time.Minute)
		// The accepted ones want a scan of the pending rows: less often.
		s.ExpirePending(ctx, n%unreportedSweepRatio == 0 || s.sweepWait.Load() > 0)
		cancel()
	}
}

// ExpirePending runs at Hub start and every pendingJobSweepEvery: a Hub
// stopped between writing a Job's row and its broker's answer leaves the
// row pending forever. accepted: also the accepted Jobs never reported
// (expireUnreportedJobs).
func (s *Service) ExpirePending(ctx context.Context, accepted bool) {
	n, err := s.store.ExpirePendingJobs(ctx, time.Now().UTC().Add(-pendingJobTTL), msgHubRestarted)
	switch {
	case err != nil:
		s.log.Warn("expiring pending jobs", "err", err)
	case n > 0:
		s.log.Warn("jobs left pending by an earlier Hub marked error", "jobs", n)
	}
	if accepted {
		s.expireUnreportedJobs(ctx)
	}
}

// acceptedPendingTTL is how long an accepted Job may stay pending, its
// broker never reporting it from the spoke: a broker submits right after
// it answers and reports the Job queued, or its typed error within the
// spoke's connect timeout; its reports survive its reconnects and
// restarts. Past this, the broker lost it (killed between its answer and
// the submit). Should it report the Job alive after all,
// ApplyUpdate has it cancelled.
const acceptedPendingTTL = time.Hour

const msgNeverReported = "the runtime broker accepted the run but never reported the Job from its spoke"

// expireUnreportedJobs ends the accepted Jobs pending for longer than
// acceptedPendingTTL (ExpirePendingJobs takes only the unanswered ones).
func (s *Service) expireUnreportedJobs(ctx context.Context) {
	before := time.Now().UTC().Add(-acceptedPendingTTL)
	page := store.Page{Limit: 500}
	for {
		items, next, _, err := s.store.ListJobs(ctx, store.JobFilter{State: api.JobStatePending}, page)
		if err != nil {
			s.log.Warn("expiring unreported jobs", "err", err)
			return
		}
		for _, j := range items {
			if j.Name == "" || !j.CreatedAt.Before(before) {
				continue
			}
			out, err := s.store.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
				if x.State != api.JobStatePending {
					return errJobUnchanged
				}
				now := time.Now().UTC()
				x.State, x.Message, x.FinishedAt = api.JobStateError, msgNeverReported, &now
				x.Error = &api.JobError{Status: "error", Cluster: x.Cluster, Tier: x.Tier, Message: msgNeverReported}
				return nil
			})
			switch {
			case err == nil:
				s.log.Warn("accepted job never reported by its broker marked error", "job", out.ID, "cluster", out.Cluster,
					"tier", out.Tier, "broker_id", out.BrokerID)
			case errors.Is(err, errJobUnchanged), isNotFound(err):
			default:
				s.log.Warn("expiring an unreported job", "job", j.ID, "err", err)
			}
		}
		if next == "" {
			return
		}
		page.Cursor = next
	}
}
