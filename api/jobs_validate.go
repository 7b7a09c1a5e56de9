package api

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The Job run's rules, one place for every layer: the CLI checks a
// `scion job run` with them before a round trip, the Hub before it writes
// a row, the broker before it accepts a job.run, and the spoke's runner
// (spoke/jobs.Validate) before it submits; the fleet file's default queue
// is checked with CheckJobQueue too. A value one layer refuses is thus
// refused by the first with a 400, never after the run was accepted.

// MaxJobQueueLen bounds a queue name: Kueue carries it as the value of the
// Job's kueue.x-k8s.io/queue-name label (at most 63 characters).
const MaxJobQueueLen = 63

var (
	// A cluster is a key of the fleet file's [clusters.<name>] and the
	// "cluster" label of metrics and of the Job: a DNS label.
	jobClusterRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// A queue is a Kueue LocalQueue's name (a DNS subdomain) that is also
	// a label value (at most 63): lower-case letters, digits, '-' and
	// '.', starting and ending with a letter or digit.
	jobQueueRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// CheckJobCluster refuses a cluster name that cannot be a fleet key.
func CheckJobCluster(c string) error {
	if !jobClusterRE.MatchString(c) {
		return BadRequest("invalid cluster %s: a cluster name is a DNS label (lower-case letters, digits and -, at most 63)", Quote(c))
	}
	return nil
}

// CheckJobQueue refuses a queue name Kueue could not carry ("" is the
// cluster's default queue, or none).
func CheckJobQueue(q string) error {
	if q == "" {
		return nil
	}
	if len(q) > MaxJobQueueLen || !jobQueueRE.MatchString(q) {
		return BadRequest("invalid queue %s: a queue is a Kueue LocalQueue name that is also a label value: "+
			"lower-case letters, digits, - and ., starting and ending with a letter or digit, at most %d", Quote(q), MaxJobQueueLen)
	}
	return nil
}

// CheckJobImage refuses an empty image, a long one, or one holding a
// space or a control character.
func CheckJobImage(image string) error {
	if strings.TrimSpace(image) == "" {
		return BadRequest("image is required")
	}
	return CheckImage("image", image)
}

// CheckJobCommand refuses an empty command, an empty program, or one over
// the argument and byte bounds.
func CheckJobCommand(cmd []string) error {
	if len(cmd) == 0 {
		return BadRequest("command is required: at least one argument")
	}
	if len(cmd) > MaxJobCommandArgs {
		return BadRequest("command has %d arguments, at most %d", len(cmd), MaxJobCommandArgs)
	}
	if cmd[0] == "" {
		return BadRequest("command's program (its first argument) is empty")
	}
	total := 0
	for i, a := range cmd {
		total += len(a)
		if err := CheckText(fmt.Sprintf("command[%d]", i), a, MaxJobCommandBytes); err != nil {
			return err
		}
	}
	if total > MaxJobCommandBytes {
		return BadRequest("command is %d bytes, at most %d", total, MaxJobCommandBytes)
	}
	return nil
}

// CheckJobGPUs refuses a GPU count out of range.
func CheckJobGPUs(n int) error {
	if n < 0 || n > MaxJobGPUs {
		return BadRequest("gpus must be from 0 to %d, got %d", MaxJobGPUs, n)
	}
	return nil
}

// CheckJobDeadline refuses a deadline out of range (0 is the default).
func CheckJobDeadline(d time.Duration) error {
	if d == 0 {
		return nil
	}
	if d < time.Second || d > MaxJobDeadline {
		return BadRequest("deadline %v must be from 1s to %s", d, MaxJobDeadline)
	}
	return nil
}

// CheckJobEnv refuses too many variables, a name that is not an
// identifier (ValidEnvName), or a value over its bound.
func CheckJobEnv(env map[string]string) error {
	if len(env) > MaxJobEnv {
		return BadRequest("env has %d entries, at most %d", len(env), MaxJobEnv)
	}
	for k, v := range env {
		if !ValidEnvName(k) {
			return BadRequest("invalid env name %s: use letters, digits and _ (not starting with a digit), at most %d", Quote(k), MaxEnvNameLen)
		}
		if err := CheckText("env "+k, v, MaxJobEnvValueBytes); err != nil {
			return err
		}
	}
	return nil
}

// Validate is the one check of a JobRunRequest (see the rules above):
// every refusal is a 400 invalid_request naming the field.
func (r *JobRunRequest) Validate() error {
	if r.Cluster != "" {
		if err := CheckJobCluster(r.Cluster); err != nil {
			return err
		}
	}
	if r.DeadlineSeconds < 0 || r.DeadlineSeconds > int64(MaxJobDeadline/time.Second) {
		return BadRequest("deadlineSeconds must be from 1 to %d (%s), got %d", int64(MaxJobDeadline/time.Second), MaxJobDeadline, r.DeadlineSeconds)
	}
	for _, err := range []error{CheckJobImage(r.Image), CheckJobCommand(r.Command), CheckJobGPUs(r.GPUs),
		CheckJobQueue(r.Queue), CheckJobEnv(r.Env)} {
		if err != nil {
			return err
		}
	}
	return nil
}

// WithDefaults fills what a request may leave out: the deadline.
func (r *JobRunRequest) WithDefaults() {
	if r.DeadlineSeconds == 0 {
		r.DeadlineSeconds = int64(DefaultJobDeadline / time.Second)
	}
}
