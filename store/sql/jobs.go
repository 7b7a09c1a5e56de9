package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// jobListCols are the columns a list reads: every one but the blobs.
const jobListCols = `id, project_id, agent_id, broker_id, cluster, tier, namespace, name, image, command, gpus, queue,
	deadline_seconds, state, message, created_by, created_at, updated_at, started_at, finished_at, exit_code, result,
	error, log_bytes, trace_bytes`

const jobCols = jobListCols + `, logs, trace`

// jobWriteCols are the columns jobArgs encodes, in its order: every one
// but id and created_at, which only the insert writes.
const jobWriteCols = `project_id, agent_id, broker_id, cluster, tier, namespace, name, image, command, gpus, queue,
	deadline_seconds, state, message, created_by, updated_at, started_at, finished_at, exit_code, result, error, logs,
	trace, log_bytes, trace_bytes`

const insertJobSQL = `INSERT INTO jobs (` + jobWriteCols + `, id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
	$9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)`

const updateJobSQL = `UPDATE jobs SET project_id = $1, agent_id = $2, broker_id = $3, cluster = $4, tier = $5,
	namespace = $6, name = $7, image = $8, command = $9, gpus = $10, queue = $11, deadline_seconds = $12, state = $13,
	message = $14, created_by = $15, updated_at = $16, started_at = $17, finished_at = $18, exit_code = $19,
	result = $20, error = $21, logs = $22, trace = $23, log_bytes = $24, trace_bytes = $25 WHERE id = $26`

// scanJob reads jobListCols, and the blobs too when full.
func (s *Store) scanJob(row Row, full bool) (*store.Job, error) {
	var j store.Job
	var cmd, result, jerr, logs []byte
	var exit sql.NullInt64
	dest := []any{&j.ID, &j.ProjectID, &j.AgentID, &j.BrokerID, &j.Cluster, &j.Tier, &j.Namespace, &j.Name, &j.Image,
		&cmd, &j.GPUs, &j.Queue, &j.DeadlineSeconds, &j.State, &j.Message, &j.CreatedBy, s.d.ScanTime(&j.CreatedAt),
		s.d.ScanTime(&j.UpdatedAt), s.scanPtrTime(&j.StartedAt), s.scanPtrTime(&j.FinishedAt), &exit, &result, &jerr,
		&j.LogBytes, &j.TraceBytes}
	if full {
		dest = append(dest, &logs, &j.Trace)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if exit.Valid {
		n := int(exit.Int64)
		j.ExitCode = &n
	}
	if len(result) > 0 {
		j.Result = json.RawMessage(result)
	}
	if len(j.Trace) == 0 {
		j.Trace = nil
	}
	j.Logs = string(logs)
	if err := dbutil.UnJSON(cmd, &j.Command); err != nil {
		return nil, fmt.Errorf("job %s command: %w", j.ID, err)
	}
	if err := dbutil.UnJSON(jerr, &j.Error); err != nil {
		return nil, fmt.Errorf("job %s error: %w", j.ID, err)
	}
	return &j, nil
}

// normJob normalises what a write stores: times to the engines'
// precision, an empty Result or Trace to none, and the sizes to those of
// Logs and Trace (the sizes are the store's, never the caller's).
func normJob(j *store.Job) {
	j.CreatedAt, j.UpdatedAt = dbutil.Time(j.CreatedAt), dbutil.Time(j.UpdatedAt)
	j.StartedAt, j.FinishedAt = dbutil.TimePtr(j.StartedAt), dbutil.TimePtr(j.FinishedAt)
	if len(j.Result) == 0 {
		j.Result = nil
	}
	if len(j.Trace) == 0 {
		j.Trace = nil
	}
	j.LogBytes, j.TraceBytes = len(j.Logs), len(j.Trace)
}

// jobArgs encodes jobWriteCols of a normalised j.
func (s *Store) jobArgs(j *store.Job) ([]any, error) {
	cmd, err := dbutil.Strings(j.Command)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	// Invalid JSON is refused here so both engines agree (PostgreSQL's
	// json type would refuse it, SQLite would not).
	if j.Result != nil && !json.Valid(j.Result) {
		return nil, errors.New("result is not valid JSON")
	}
	jerr, err := dbutil.JSON(j.Error)
	if err != nil {
		return nil, fmt.Errorf("error: %w", err)
	}
	// Optional columns bind as NULL when unset (a typed nil would not).
	var exit, logs, trace any
	if j.ExitCode != nil {
		exit = int64(*j.ExitCode)
	}
	if j.Logs != "" {
		logs = []byte(j.Logs)
	}
	if j.Trace != nil {
		trace = j.Trace
	}
	return []any{j.ProjectID, j.AgentID, j.BrokerID, j.Cluster, j.Tier, j.Namespace, j.Name, j.Image, s.d.JSON(cmd),
		j.GPUs, j.Queue, j.DeadlineSeconds, string(j.State), j.Message, j.CreatedBy, s.d.Time(j.UpdatedAt),
		s.ptrTime(j.StartedAt), s.ptrTime(j.FinishedAt), exit, s.d.JSON(j.Result), s.d.JSON(jerr), logs, trace,
		j.LogBytes, j.TraceBytes}, nil
}

// CreateJob inserts j; the project's foreign key makes a missing project
// ErrNotFound (and, on PostgreSQL, its check's lock keeps a concurrent
// DeleteProject from missing the row: one waits for the other).
func (s *Store) CreateJob(ctx context.Context, j *store.Job) error {
	n := *j
	stamp(&n.ID, &n.CreatedAt, &n.UpdatedAt)
	normJob(&n)
	what := fmt.Sprintf("create job %q in project %q", n.ID, n.ProjectID)
	args, err := s.jobArgs(&n)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := s.w.Exec(ctx, insertJobSQL, append(args, n.ID, s.d.Time(n.CreatedAt))...); err != nil {
		return s.mapErr(err, what)
	}
	*j = n
	return nil
}

// GetJob reads a Job with its logs and trace.
func (s *Store) GetJob(ctx context.Context, id string) (*store.Job, error) {
	j, err := s.scanJob(s.r.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id), true)
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("job %q", id))
	}
	return j, nil
}

// ListJobs lists Jobs in ID order, without their logs and traces.
func (s *Store) ListJobs(ctx context.Context, f store.JobFilter, page store.Page) ([]*store.Job, string, int, error) {
	var filters []filter
	for _, c := range []struct{ col, val string }{{"project_id", f.ProjectID}, {"agent_id", f.AgentID},
		{"broker_id", f.BrokerID}, {"state", string(f.State)}} {
		if c.val != "" {
			filters = append(filters, filter{col: c.col, val: c.val})
		}
	}
	if f.ProjectIDs != nil {
		filters = append(filters, filter{col: "project_id", in: f.ProjectIDs})
	}
	return list(ctx, s, "list jobs", "jobs", jobListCols, filters, page,
		func(r Row) (*store.Job, error) { return s.scanJob(r, false) }, func(j *store.Job) string { return j.ID })
}

// UpdateJobWith reads the Job, locked, lets fn change it and writes it
// back, in one transaction: the row lock (PostgreSQL) or the single
// writer (SQLite) keeps two read-modify-writes of one Job (the broker's
// progress reports, a cancel) from writing back what the other replaced.
func (s *Store) UpdateJobWith(ctx context.Context, id string, fn func(*store.Job) error) (*store.Job, error) {
	what := fmt.Sprintf("update job %q", id)
	var out *store.Job
	err := s.d.Tx(ctx, func(tx Querier) error {
		j, err := s.scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1 FOR UPDATE`, id), true)
		if err != nil {
			return s.mapErr(err, fmt.Sprintf("job %q", id))
		}
		if err := fn(j); err != nil {
			return err
		}
		j.ID = id // fn may not move the row
		j.UpdatedAt = dbutil.Now()
		normJob(j)
		args, err := s.jobArgs(j)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		n, err := tx.Exec(ctx, updateJobSQL, append(args, id)...)
		if err := s.mustAffect(n, err, what); err != nil {
			return err
		}
		out = j
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteJob deletes a Job; ErrNotFound if there is none.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	n, err := s.w.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, id)
	return s.mustAffect(n, err, fmt.Sprintf("delete job %q", id))
}

// ExpirePendingJobs ends the Jobs left pending before `before` and never
// accepted (no name on the spoke) in state error, with an Error naming their cluster and tier as the broker's own
// would. The rows are read locked and written in one transaction, each
// only if still pending, so a broker's answer that lands meanwhile is
// either seen (and the row left alone) or waits for this to commit.
func (s *Store) ExpirePendingJobs(ctx context.Context, before time.Time, msg string) (int, error) {
	what := "expire pending jobs"
	var count int
	err := s.d.Tx(ctx, func(tx Querier) error {
		type stale struct{ id, cluster, tier string }
		rows, err := tx.Query(ctx, `SELECT id, cluster, tier FROM jobs WHERE state = $1 AND created_at < $2
			AND name = '' ORDER BY id FOR UPDATE`, string(api.JobStatePending), s.d.Time(dbutil.Time(before)))
		found, err := collect(rows, err, func(r Row) (x stale, err error) { return x, r.Scan(&x.id, &x.cluster, &x.tier) })
		if err != nil {
			return s.mapErr(err, what)
		}
		now := s.d.Time(dbutil.Now())
		for _, x := range found {
			jerr, err := json.Marshal(api.JobError{Status: "error", Cluster: x.cluster, Tier: x.tier, Message: msg})
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			n, err := tx.Exec(ctx, `UPDATE jobs SET state = $1, message = $2, error = $3, finished_at = $4,
				updated_at = $4 WHERE id = $5 AND state = $6 AND name = ''`, string(api.JobStateError), msg, s.d.JSON(jerr), now,
				x.id, string(api.JobStatePending))
			if err != nil {
				return s.mapErr(err, what)
			}
			count += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return count, nil
}
