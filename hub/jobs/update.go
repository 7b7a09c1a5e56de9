package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// maxJobMessage bounds a Job's progress line and its error's message.
const maxJobMessage = 2048

// errJobUnchanged is mergeJobUpdate's "nothing to write": an update
// equal to what the row holds (a broker sending its latest again).
var errJobUnchanged = errors.New("job unchanged")

// mergeJobUpdate applies broker brokerID's update u to row j, or says
// why not: the Job is another broker's (never let broker A write broker
// B's Job), or final already (a terminal Job never changes). Sizes are
// bounded here: the log snapshot keeps its tail, a result must be JSON
// within api.MaxJobResultBytes, a trace within api.MaxJobTraceBytes.
func mergeJobUpdate(j *store.Job, brokerID string, u wire.JobUpdate) error {
	if j.BrokerID != brokerID {
		return api.Forbidden("job %s is not run by this runtime broker", u.JobID)
	}
	if j.State.Terminal() {
		if u.State == j.State {
			return errJobUnchanged // the latest sent again
		}
		return api.Conflict(api.CodeInvalidPhase, "job %s is %s already; a finished job does not change", j.ID, j.State)
	}
	switch u.State {
	case api.JobStatePending, api.JobStateQueued, api.JobStateRunning, api.JobStateSucceeded, api.JobStateFailed,
		api.JobStateCancelled, api.JobStateError:
	default:
		return api.BadRequest("job.update: unknown state %s", api.Quote(string(u.State)))
	}
	if len(u.Result) > 0 {
		if len(u.Result) > api.MaxJobResultBytes {
			return api.Errorf(api.CodeRequestTooLarge, "job.update: result of %d bytes exceeds %d", len(u.Result), api.MaxJobResultBytes)
		}
		if !json.Valid(u.Result) {
			return api.BadRequest("job.update: result is not valid JSON")
		}
	}
	if len(u.Trace) > api.MaxJobTraceBytes {
		return api.Errorf(api.CodeRequestTooLarge, "job.update: trace of %d bytes exceeds %d", len(u.Trace), api.MaxJobTraceBytes)
	}
	// A cancel the broker has not confirmed keeps the Job cancelling
	// (and its message, which says where the cancel is) through the
	// broker's progress reports; only a final report ends it.
	keep := j.State == api.JobStateCancelling && !u.State.Terminal()
	if !keep {
		j.State = u.State
	}
	if w := u.Where; w != nil && j.Name == "" {
		// The run's answer never reached the Hub: this is it.
		j.Cluster, j.Tier, j.Namespace, j.Name = clip(w.Cluster, 63), clip(w.Tier, 32), clip(w.Namespace, 63), clip(w.Name, 253)
	}
	fillQueue(j, u.Where)
	if u.Message != "" && !keep {
		j.Message = cleanText(u.Message, maxJobMessage)
	}
	if u.StartedAt != nil {
		j.StartedAt = u.StartedAt
	}
	if u.FinishedAt != nil {
		j.FinishedAt = u.FinishedAt
	}
	if u.ExitCode != nil {
		j.ExitCode = u.ExitCode
	}
	if len(u.Result) > 0 {
		// As printed, but valid UTF-8 (PostgreSQL's json refuses other
		// bytes; in valid JSON they can only be inside strings, so the
		// replacement keeps it valid).
		j.Result = bytes.ToValidUTF8(append(json.RawMessage(nil), u.Result...), []byte("\uFFFD"))
	}
	if u.Error != nil {
		e := *u.Error
		e.Status, e.Message = "error", cleanText(e.Message, maxJobMessage)
		e.Cluster, e.Tier = clip(e.Cluster, 63), clip(e.Tier, 32)
		if e.Cluster == "" {
			e.Cluster = j.Cluster
		}
		if e.Tier == "" {
			e.Tier = j.Tier
		}
		j.Error = &e
	}
	if u.Logs != nil {
		logs := *u.Logs
		if len(logs) > api.MaxJobLogBytes {
			logs = logs[len(logs)-api.MaxJobLogBytes:] // the tail is what tells
		}
		j.Logs, j.LogBytes = logs, len(logs)
	}
	if len(u.Trace) > 0 {
		j.Trace, j.TraceBytes = append([]byte(nil), u.Trace...), len(u.Trace)
	}
	if j.State.Terminal() && j.FinishedAt == nil {
		now := time.Now().UTC()
		j.FinishedAt = &now
	}
	return nil
}

// cleanText is a broker's line (a pod's words, maybe) as the ledger
// keeps it: valid UTF-8 without NUL (PostgreSQL's text refuses both),
// at most n bytes cut on a rune boundary.
func cleanText(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return clipText(strings.ReplaceAll(s, "\x00", ""), n)
}

// clipText cuts s to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// ApplyUpdate records broker brokerID's job.update (the Hub's control
// channel hands it over). A refusal is logged (a broker writing
// another's Job is a bug or worse) and answered to the broker.
func (s *Service) ApplyUpdate(ctx context.Context, brokerID string, u wire.JobUpdate) error {
	if u.JobID == "" {
		return api.BadRequest("job.update: no jobId")
	}
	var was api.JobState
	orphan := false
	j, err := s.store.UpdateJobWith(ctx, u.JobID, func(j *store.Job) error {
		was = j.State
		orphan = j.BrokerID == brokerID && j.State.Terminal() && !u.State.Terminal()
		return mergeJobUpdate(j, brokerID, u)
	})
	switch {
	case errors.Is(err, errJobUnchanged):
		return nil
	case isNotFound(err):
		s.log.Warn("job update refused", "job", api.Quote(u.JobID), "broker_id", brokerID, "reason", "no such job")
		if _, perr := uuid.Parse(u.JobID); perr == nil && !u.State.Terminal() {
			// Alive on a spoke with no row (its project deleted, the
			// ledger with it): nobody can reach it to cancel it.
			s.cancelOrphanJob(u.JobID, brokerID, "")
		}
		return jobNotFound(u.JobID)
	case err != nil:
		if ae := (*api.Error)(nil); errors.As(err, &ae) {
			s.log.Warn("job update refused", "job", u.JobID, "broker_id", brokerID, "state", u.State, "reason", ae.Message)
		}
		if orphan {
			// The ledger ended this Job (its run's answer was lost, or it
			// was cancelled before the broker answered) while its broker
			// follows it alive on a spoke: nobody could cancel it any
			// more, and it would hold its GPUs to its deadline.
			s.cancelOrphanJob(u.JobID, brokerID, was)
		}
		return err
	}
	if j.State != was {
		s.log.Info("job state", "job", j.ID, "cluster", j.Cluster, "tier", j.Tier, "state", j.State, "was", was, "broker_id", brokerID)
		if j.State.Terminal() {
			if j.Name != "" {
				// Where the broker said it put the Job (a Job not yet
				// accepted still has the name its caller asked for).
				s.metrics.learnCluster(j.Cluster)
			}
			s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(j.Cluster), string(j.State)).Inc()
		}
	}
	return nil
}

// cancelOrphanJob asks broker brokerID to delete Job id on its spoke,
// in the background (the caller is the broker's own job.update): the
// ledger has it in final state was ("" for no row at all) while the
// broker reports it alive.
// The broker's cancelled report then finds the row final and is
// refused, which it drops.
func (s *Service) cancelOrphanJob(id, brokerID string, was api.JobState) {
	s.hub.Go(func() {
		ctx, cancel := context.WithTimeout(s.systemCtx(), s.dispatchTimeout)
		defer cancel()
		log := s.log.With("job", id, "broker_id", brokerID, "state", was)
		if err := s.hub.Dispatch(ctx, brokerID, wire.MethodJobCancel, wire.JobRef{JobID: id}, nil, jobCancelKey(id)); err != nil {
			log.Warn("cancelling a job its broker runs but the ledger ended", "err", err)
			return
		}
		log.Warn("cancelled a job its broker ran but the ledger had ended")
	})
}
