package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
)

// scion job: delegated Jobs (ADR-0046), an agent's work run as a
// Kubernetes Job on a spoke cluster its broker reaches.

func newJobCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "job",
		Short: "Run and follow delegated Jobs on spoke clusters",
		Long: `A delegated Job is an agent's work (a measurement, a build) run as a
Kubernetes Job on a remote "spoke" cluster that the agent's Runtime Broker
reaches with credentials only the broker holds (broker-scoped secrets, see
'scion hub secret set --broker'). The Hub keeps the ledger; the broker
submits the Job, follows it and reports its state, logs and result.

Every job command needs the right to act on the Job's agent: an agent for
itself, its creator, its project's owner, a coordinator of its project, or
a hub admin. A Job you cannot reach is answered "job_not_found".`,
	})
	c.AddCommand(newJobRunCmd(a), newJobListCmd(a), newJobShowCmd(a), newJobLogsCmd(a), newJobCancelCmd(a))
	return c
}

// jobAgent resolves the agent a job command is for: --agent, else the
// agent this CLI runs in (SCION_AGENT_ID, else the agent token's own).
func jobAgent(cmd *cobra.Command, cl *client.Client, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if id := os.Getenv(api.EnvAgentID); id != "" {
		return id, nil
	}
	who, err := cl.Whoami(cmd.Context())
	if err != nil {
		return "", err
	}
	if who.Kind == "agent" {
		return who.ID, nil
	}
	return "", usageErrorf("%s needs --agent outside an agent", cmd.CommandPath())
}

type jobRunFlags struct {
	agent, project, cluster, image, queue string
	gpus                                  int
	deadline                              time.Duration
	env                                   []string
	detach, logs                          bool
}

func newJobRunCmd(a *app) *cobra.Command {
	var f jobRunFlags
	c := &cobra.Command{
		Use:   "run [flags] -- command args...",
		Short: "Run a Job for an agent on a spoke cluster and wait for its result",
		Long: `Run a delegated Job: the agent's broker resolves the cluster (--cluster, else
the jobs cluster of the agent's profile, else the broker's own cluster),
submits the Job there and follows it.

By default the command waits: it prints a progress line to stderr whenever
the Job's state or message changes (with --logs also the Job's log as it
grows; without, the last lines of the log of a Job that did not succeed),
then the Job's result JSON (its sentinel result line) to stdout. It exits 0 when the Job succeeded and 1
when it failed, was cancelled or could not be run; for an error it prints
the typed error {"status":"error","cluster":...,"tier":...,"message":...}.
With -o json it prints the whole Job instead. With --detach it prints the
Job as soon as the broker accepted it and returns.

Inside an agent, --agent defaults to the agent itself.

Errors: cluster_not_found (404: the profile offers no such cluster),
secret_not_found (404: the cluster's broker-scoped secret is not set),
invalid_request (400: a bad flag value), runtime_broker_offline (503),
unsupported_operation (501: the broker does not run Jobs).`,
		Example: `  scion job run --cluster h200 --image ghcr.io/acme/measure:1 --gpus 1 -- python measure.py --rung 3
  scion job run --agent worker --project web --cluster b200 --image busybox --deadline 30m --detach -- sh -c 'echo hi'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 0 || len(args) == 0 {
				return usageErrorf("put the Job's command after --, as in: %s --image busybox -- echo hi", cmd.CommandPath())
			}
			req, err := f.request(args)
			if err != nil {
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			agent, err := jobAgent(cmd, cl, f.agent)
			if err != nil {
				return err
			}
			j, err := cl.RunJob(cmd.Context(), agent, projectOrDefault(f.project), req)
			if err != nil {
				return err
			}
			if f.detach {
				return a.printJob(cmd, j)
			}
			return a.waitJob(cmd, cl, j, f.logs)
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.agent, "agent", "", "agent the Job is for (name or ID; default: the agent this runs in)")
	projectFlag(c, &f.project)
	fs.StringVar(&f.cluster, "cluster", "", "spoke cluster (default: the agent profile's jobs cluster, else the broker's own)")
	fs.StringVar(&f.image, "image", "", "container image of the Job (required)")
	fs.IntVar(&f.gpus, "gpus", 0, fmt.Sprintf("GPUs (0 to %d)", api.MaxJobGPUs))
	fs.StringVar(&f.queue, "queue", "", "Kueue LocalQueue (default: the cluster's)")
	fs.DurationVar(&f.deadline, "deadline", api.DefaultJobDeadline, fmt.Sprintf("the Job's deadline (activeDeadlineSeconds), at most %s", api.MaxJobDeadline))
	fs.StringArrayVar(&f.env, "env", nil, "environment variable KEY=VALUE of the Job (repeatable; never a secret)")
	fs.BoolVar(&f.detach, "detach", false, "print the Job once accepted and return, without waiting")
	fs.BoolVar(&f.logs, "logs", false, "while waiting, print the Job's log to stderr as it grows")
	return c
}

func (f *jobRunFlags) request(command []string) (api.JobRunRequest, error) {
	req := api.JobRunRequest{Cluster: f.cluster, Image: f.image, Command: command, GPUs: f.gpus, Queue: f.queue}
	if f.image == "" {
		return req, usageErrorf("--image is required")
	}
	if f.deadline < time.Second || f.deadline > api.MaxJobDeadline {
		return req, usageErrorf("invalid --deadline %s: from 1s to %s", f.deadline, api.MaxJobDeadline)
	}
	req.DeadlineSeconds = int64(f.deadline / time.Second)
	for _, kv := range f.env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return req, usageErrorf("invalid --env %q: use KEY=VALUE", kv)
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[k] = v
	}
	// The rule the Hub, the broker and the spoke apply: a bad value is
	// a usage error here, before any round trip.
	return req, validateInput(req.Validate())
}

// Polling of a waited-for Job: every second at first, backing off to
// jobPollMax while nothing changes.
const (
	jobPollMin = time.Second
	jobPollMax = 5 * time.Second
)

// jobPoll is the clock of waitJob; tests shorten it.
var jobPoll = jobPollMin

// waitJob follows j until it is final, printing a progress line to
// stderr per change, then its outcome (see job run's help).
func (a *app) waitJob(cmd *cobra.Command, cl *client.Client, j *api.Job, follow bool) error {
	ctx := cmd.Context()
	errw := cmd.ErrOrStderr()
	last := ""
	delay := jobPoll
	var lw logWriter
	for {
		line := progressLine(j)
		if line != last {
			fmt.Fprintln(errw, line)
			last, delay = line, jobPoll
		}
		if (follow && j.LogBytes > 0 && !j.UpdatedAt.Equal(lw.at)) || (!follow && j.State.Terminal() && j.State != api.JobStateSucceeded && j.LogBytes > 0) {
			// A failed read only skips this print: the next snapshot
			// has what it would have shown.
			if logs, err := cl.JobLogs(ctx, j.ID); err == nil {
				if follow {
					lw.write(errw, logs, j.UpdatedAt)
				} else {
					fmt.Fprintf(errw, "the last lines of its log:\n%s", lastLines(logs, jobLogTailLines))
				}
			}
		}
		if j.State.Terminal() {
			return a.jobOutcome(cmd, j)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			fmt.Fprintf(errw, "stopped waiting; the Job goes on: scion job show %s\n", j.ID)
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*3/2, max(jobPollMax, jobPoll))
		next, err := cl.GetJob(ctx, j.ID)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ae *api.Error
			var ue *url.Error
			if (errors.As(err, &ae) && (ae.Status >= 500 || ae.Status == http.StatusTooManyRequests)) ||
				(!errors.As(err, &ae) && errors.As(err, &ue)) {
				// A Hub restarting (its connections cut or refused), a proxy
				// blip, a rate limit: the Job goes on, and so does the wait.
				fmt.Fprintf(errw, "job %s: %v (retrying)\n", j.ID, err)
				continue
			}
			return err
		}
		j = next
	}
}

func progressLine(j *api.Job) string {
	s := fmt.Sprintf("job %s on %s: %s", j.ID, show.OrDash(j.Cluster), j.State)
	if j.Message != "" {
		s += ": " + j.Message
	}
	return s
}

// jobOutcome prints a final Job and returns its exit: nil for
// succeeded, exit code 1 otherwise.
func (a *app) jobOutcome(cmd *cobra.Command, j *api.Job) error {
	out := cmd.OutOrStdout()
	var err error
	switch {
	case a.json():
		err = a.render(out, j)
	case j.State == api.JobStateError:
		e := j.Error
		if e == nil {
			e = &api.JobError{Cluster: j.Cluster, Tier: j.Tier, Message: j.Message}
		}
		e.Status = "error"
		err = show.JSON(out, e)
	case len(j.Result) > 0:
		err = show.JSON(out, json.RawMessage(j.Result))
	case j.State == api.JobStateSucceeded:
		fmt.Fprintf(cmd.ErrOrStderr(), "job %s printed no result line\n", j.ID)
	}
	if err != nil {
		return err
	}
	if j.State == api.JobStateSucceeded {
		return nil
	}
	if j.State == api.JobStateFailed && j.ExitCode != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "job %s failed with exit code %d; its logs: scion job logs %s\n", j.ID, *j.ExitCode, j.ID)
	}
	return &exitCodeError{code: exitError}
}

func newJobListCmd(a *app) *cobra.Command {
	var agent, project string
	c := &cobra.Command{
		Use:   "list",
		Short: "List Jobs of an agent or a project",
		Long: `List delegated Jobs, oldest first. --agent lists that agent's Jobs (you must
be able to act on it); --project alone lists every Job of the project (its
owner, a coordinator of it, a hub admin). Neither: inside an agent, its own
Jobs; otherwise every Job (hub admins).`,
		Example: `  scion job list --agent worker
  scion job list --project web -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if project == "" && agent != "" {
				project = projectOrDefault("")
			}
			js, err := cl.ListAllJobs(cmd.Context(), client.JobFilter{Agent: agent, Project: project})
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), js)
			}
			t := show.NewTable(cmd.OutOrStdout(), "ID", "AGENT", "CLUSTER", "STATE", "AGE", "MESSAGE")
			for _, j := range js {
				t.Row(j.ID, j.AgentID, show.OrDash(j.Cluster), string(j.State), show.Age(j.CreatedAt), show.OrDash(truncateText(j.Message, 60)))
			}
			return t.Flush()
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "the agent's Jobs (name or ID)")
	c.Flags().StringVar(&project, "project", "", "the project's Jobs, or the project of --agent's name")
	return c
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func newJobShowCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "show <job-id>",
		Short:   "Show a Job: where it runs, its state, result and error",
		Example: `  scion job show 0190c3a4-5e6f-7a00-8000-1234567890ab -o json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			j, err := cl.GetJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printJob(cmd, j)
		},
	}
}

func (a *app) printJob(cmd *cobra.Command, j *api.Job) error {
	if a.json() {
		return a.render(cmd.OutOrStdout(), j)
	}
	exit := ""
	if j.ExitCode != nil {
		exit = strconv.Itoa(*j.ExitCode)
	}
	errText := ""
	if j.Error != nil {
		errText = j.Error.Message
	}
	return show.KeyValues(cmd.OutOrStdout(),
		"ID", j.ID, "State", string(j.State), "Message", j.Message,
		"Agent", j.AgentID, "Project", j.ProjectID, "Broker", j.BrokerID,
		"Cluster", j.Cluster, "Tier", j.Tier, "Namespace", j.Namespace, "Name", j.Name,
		"Image", j.Image, "Command", strings.Join(j.Command, " "), "GPUs", strconv.Itoa(j.GPUs), "Queue", j.Queue,
		"Deadline", (time.Duration(j.DeadlineSeconds) * time.Second).String(),
		"Created", j.CreatedAt.Local().Format(time.RFC3339)+" by "+j.CreatedBy,
		"Started", timeText(j.StartedAt), "Finished", timeText(j.FinishedAt), "Exit code", exit,
		"Result", string(j.Result), "Error", errText,
		"Logs", fmt.Sprintf("%d bytes", j.LogBytes), "Trace", fmt.Sprintf("%d bytes", j.TraceBytes))
}

func newJobLogsCmd(a *app) *cobra.Command {
	var trace string
	c := &cobra.Command{
		Use:   "logs <job-id>",
		Short: "Print a Job's latest log snapshot; --trace saves its trace",
		Long: fmt.Sprintf(`Print the latest log snapshot the broker sent for a Job (its last %d KiB).
With --trace FILE, also write the Job's decoded trace to FILE (an error
when the Job has none).`, api.MaxJobLogBytes>>10),
		Example: `  scion job logs 0190c3a4-5e6f-7a00-8000-1234567890ab
  scion job logs 0190c3a4-5e6f-7a00-8000-1234567890ab --trace profile.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			logs, err := cl.JobLogs(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if _, err := fmt.Fprint(cmd.OutOrStdout(), logs); err != nil {
				return err
			}
			if trace == "" {
				return nil
			}
			b, err := cl.JobTrace(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := os.WriteFile(trace, b, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "trace (%d bytes) written to %s\n", len(b), trace)
			return nil
		},
	}
	c.Flags().StringVar(&trace, "trace", "", "write the Job's decoded trace to this file")
	return c
}

func newJobCancelCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel <job-id>",
		Short: "Cancel a Job: its broker deletes it on its spoke",
		Long: `Ask the Job's broker to delete the Job on its spoke; the state becomes
cancelled when the broker reports it. A Job already cancelled is shown as it
is; one that finished otherwise is refused (invalid_phase, 409). When the
broker is offline, or does not answer within 10 seconds, the cancel is
queued and delivered when it reconnects: the Job reads cancelling until the
broker confirms, or ends cancelled when the broker is deregistered.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			j, err := cl.CancelJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), j)
			}
			if j.State == api.JobStateCancelling {
				fmt.Fprintf(cmd.OutOrStdout(), "Job %s is %s: %s.\n", j.ID, j.State, j.Message)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Cancel of job %s sent to its broker (now %s).\n", j.ID, j.State)
			return nil
		},
	}
}
