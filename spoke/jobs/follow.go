package jobs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
)

// Defaults of FollowOptions.
const (
	DefaultPollInterval = 2 * time.Second
	DefaultRetryFor     = 5 * time.Minute
	// DeadlineMargin is how long past a Job's activeDeadlineSeconds
	// (counted from its start) the follow waits for the spoke to say it
	// is over, before giving it up: the Job controller's own clock and
	// its status updates lag.
	DeadlineMargin = 5 * time.Minute
)

// LabelPodJobName is the label the Job controller puts on a Job's pods
// (the pods are found by the Job's own selector when it has one).
const LabelPodJobName = "batch.kubernetes.io/job-name"

// Follow polls the Job until it is terminal or ctx ends, calling report
// with each change (the first poll is always reported); the last report
// is terminal unless ctx ended, and Follow returns it (or, when ctx ended,
// the last state seen).
//
// A status poll that fails transiently (see Transient) is retried: the
// state stays, the message says the spoke is unreachable, and only when
// the failures last o.RetryFor, or outlast the Job's deadline, is the Job
// given up with the state error and a typed api.JobError naming the
// cluster and tier. An answer that refuses (401, 403) gives it up at once;
// a 404 is the Job deleted (cancelled, or reaped): cancelled.
func Follow(ctx context.Context, c Clients, s Spec, o FollowOptions, report func(Progress)) Progress {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	f := &follower{c: c, s: s, o: o, log: lg.With("cluster", s.Cluster, "job", s.JobID), start: time.Now()}
	var last Progress
	reported := false
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return last
		case <-t.C:
		}
		p, done := f.poll(ctx)
		if ctx.Err() != nil {
			return last
		}
		if !reported || !sameProgress(last, p) || p.Logs != nil {
			if p.Logs != nil {
				f.reportedLogs = p.Logs
			}
			if report != nil {
				report(p)
			}
			reported = true
		}
		last = p
		if done {
			if p.State == api.JobStateError {
				f.log.Warn("job given up", "message", p.Message)
			} else {
				f.log.Info("job finished", "state", p.State, "message", p.Message)
			}
			return p
		}
		t.Reset(o.PollInterval)
	}
}

type follower struct {
	c     Clients
	s     Spec
	o     FollowOptions
	log   *slog.Logger
	start time.Time

	prev      Progress // the last state read from the spoke
	pods      []corev1.Pod
	startedAt time.Time
	seenRun   time.Time // the first poll that found it running (see Progress.SeenRunningAt)
	firstErr  time.Time // of the current run of failed polls
	logs      logFollower
	// reportedLogs is the snapshot last reported, so that Logs is set
	// only when it changed.
	reportedLogs *string
}

// poll reads the Job once; done says the returned Progress is terminal.
func (f *follower) poll(ctx context.Context) (Progress, bool) {
	ns, name := f.s.Namespace, Name(f.s.JobID)
	j, err := f.c.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	now := time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return f.prev, false
		}
		return f.failed(err, now)
	}
	if f.firstErr != (time.Time{}) {
		f.log.Info("spoke answers again", "after", now.Sub(f.firstErr).Round(time.Millisecond))
		f.firstErr = time.Time{}
	}
	if pods, err := f.listPods(ctx, j); err == nil {
		f.pods = pods
	} // else: the last list stands, as a failed log snapshot does
	pending := ""
	if j.Spec.Suspend != nil && *j.Spec.Suspend && f.s.Queue != "" {
		pending = workloadMessage(ctx, f.c.Dynamic, ns, j.UID)
	}
	p := Observe(f.s, j, f.pods, pending)
	if p.StartedAt != nil {
		f.startedAt = *p.StartedAt
	}
	switch {
	case p.State == api.JobStateQueued:
		f.seenRun = time.Time{} // suspended (again): its deadline restarts
	case p.State == api.JobStateRunning && f.seenRun.IsZero():
		f.seenRun = now
	}
	if !f.seenRun.IsZero() {
		seen := f.seenRun
		p.SeenRunningAt = &seen
	}
	pod := newestPod(f.pods)
	switch {
	case p.State.Terminal():
		raw := f.logs.final(ctx, f.c, ns, pod)
		sn := ParseSentinels(raw)
		p.Result, p.Trace = sn.Result, sn.Trace
		if len(sn.Notes) > 0 {
			p.Message += "; " + strings.Join(sn.Notes, "; ")
		}
		p.Logs = f.logs.changed(f.reportedLogs)
		f.prev = p
		return p, true
	case p.State == api.JobStateRunning:
		// Waiting for a pod: why is in the events (see events.go), of
		// the Job while it has none, of its pod while that is pending.
		switch {
		case pod == nil:
			if m := EventMessage(warningEvents(ctx, f.c.Kube, ns, j.UID), p.Message); m != "" {
				p.Message += ": " + m
			}
		case pod.Status.Phase == corev1.PodPending:
			if m := EventMessage(warningEvents(ctx, f.c.Kube, ns, pod.UID), p.Message); m != "" {
				p.Message += ": " + m
			}
		}
		f.logs.live(ctx, f.c, ns, pod)
		p.Logs = f.logs.changed(f.reportedLogs)
	}
	if dl, why := f.deadline(); !dl.IsZero() && now.After(dl) {
		return f.giveUp(p, why, now), true
	}
	f.prev = p
	return p, false
}

// failed handles a status poll that got no Job.
func (f *follower) failed(err error, now time.Time) (Progress, bool) {
	if apierrors.IsNotFound(err) {
		p := f.prev
		p.State, p.Logs, p.Error = api.JobStateCancelled, nil, nil
		p.Message = "the Job is gone from the spoke (deleted: cancelled, or reaped before it was seen to finish)"
		if p.FinishedAt == nil {
			p.FinishedAt = &now
		}
		return p, true
	}
	if !Transient(err) {
		return f.giveUp(f.prev, "the spoke refused the status poll: "+clip(err.Error(), 400), now), true
	}
	if f.firstErr.IsZero() {
		f.firstErr = now
		f.log.Warn("status poll failed, retrying", "error", err, "retry_for", f.o.RetryFor)
	}
	down := now.Sub(f.firstErr)
	if down >= f.o.RetryFor {
		p := f.giveUp(f.prev, fmt.Sprintf("spoke unreachable for %v (retried for %v): %s", down.Round(time.Second), f.o.RetryFor, clip(err.Error(), 400)), now)
		p.Unreachable = true
		return p, true
	}
	if dl, _ := f.deadline(); !dl.IsZero() && now.After(dl) {
		return f.giveUp(f.prev, "spoke unreachable past the Job's deadline: "+clip(err.Error(), 400), now), true
	}
	f.log.Debug("status poll failed again", "error", err, "for", down.Round(time.Millisecond))
	p := f.prev
	p.Logs = nil
	p.Message = "spoke unreachable (retrying): " + clip(err.Error(), 400)
	if p.State == "" {
		p.State = api.JobStateQueued // never read yet: it was submitted suspended
	}
	return p, false
}

// deadline is when the follow gives up a Job that is not over: the
// follow's own deadline, else the Job's deadline from its start plus
// DeadlineMargin. A Job that has not started (queued) has none: waiting
// for admission is bounded by whoever cancels it, not by its run time.
func (f *follower) deadline() (time.Time, string) {
	if f.o.Deadline > 0 {
		return f.start.Add(f.o.Deadline), fmt.Sprintf("not finished within the follow's deadline of %v", f.o.Deadline)
	}
	start := f.startedAt
	if start.IsZero() {
		start = f.seenRun
	}
	if start.IsZero() {
		return time.Time{}, ""
	}
	return start.Add(f.s.deadline() + DeadlineMargin),
		fmt.Sprintf("not finished %v past its deadline of %v: the spoke did not stop it", DeadlineMargin, f.s.deadline())
}

func (f *follower) giveUp(p Progress, msg string, now time.Time) Progress {
	p.State, p.Message, p.Logs, p.ExitCode = api.JobStateError, msg, nil, nil
	p.FinishedAt = &now
	p.Error = &api.JobError{Status: "error", Cluster: f.s.Cluster, Tier: f.s.Tier, Message: msg}
	return p
}

// listPods lists the Job's pods by its selector (the API server sets one
// with the Job's controller-uid), else by the job-name label.
func (f *follower) listPods(ctx context.Context, j *batchv1.Job) ([]corev1.Pod, error) {
	sel := LabelPodJobName + "=" + j.Name
	if j.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err == nil && !s.Empty() {
			sel = s.String()
		}
	}
	l, err := f.c.Kube.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// sameProgress compares two reports, Logs aside.
func sameProgress(a, b Progress) bool {
	eqT := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	eqI := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqE := func(x, y *api.JobError) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.State == b.State && a.Message == b.Message && eqT(a.StartedAt, b.StartedAt) && eqT(a.FinishedAt, b.FinishedAt) &&
		eqI(a.ExitCode, b.ExitCode) && bytes.Equal(a.Result, b.Result) && eqE(a.Error, b.Error) && bytes.Equal(a.Trace, b.Trace)
}
