package process

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/scion-go/scion/runtime"
)

// wrapperScript runs the agent's command ("$@" after the exit file path)
// and records its exit status; see the package documentation. The
// command's stderr joins its stdout in output.log, while the wrapper's own
// stderr (where sh reports "Terminated" and the like) is /dev/null. The
// wrapper exits with the agent's status too, so that a broker waiting for
// its child sees the same code.
const wrapperScript = `f=$1; shift
trap : HUP INT TERM
"$@" 2>&1
s=$?
echo "$s" >"$f"
exit "$s"`

// defaultPath is the PATH of agents whose Env does not set one. Agents do
// not inherit the broker's environment, which may hold its credentials.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Create implements runtime.Runtime. It only writes the agent's record; an
// agent that already exists is an error. Image is recorded but ignored.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	if !validID(spec.AgentID) {
		return runtime.Status{}, fmt.Errorf("process runtime: Create: invalid agent ID %q", spec.AgentID)
	}
	// Fail now rather than at Start: nothing could ever run this agent.
	if len(spec.Command) == 0 {
		return runtime.Status{}, fmt.Errorf("process runtime: Create %s: empty Command", spec.AgentID)
	}
	if err := os.MkdirAll(r.agentDir(spec.AgentID), 0o700); err != nil {
		return runtime.Status{}, fmt.Errorf("process runtime: Create %s: %w", spec.AgentID, err)
	}
	unlock, err := r.lock(spec.AgentID)
	if err != nil {
		// Deleted between our MkdirAll and lock: a concurrent Create of
		// the same agent won and was deleted already.
		return runtime.Status{}, fmt.Errorf("process runtime: Create %s: %w", spec.AgentID, err)
	}
	defer unlock()
	if _, err := os.Stat(r.path(spec.AgentID, recordFile)); err == nil {
		return runtime.Status{}, fmt.Errorf("process runtime: Create: agent %q already exists", spec.AgentID)
	}
	spec.Labels = maps.Clone(spec.Labels)
	spec.Env = maps.Clone(spec.Env)
	spec.Command = slices.Clone(spec.Command)
	rec := &record{
		Version:   recordVersion,
		Spec:      spec,
		Labels:    runtime.SpecLabels(spec),
		CreatedAt: time.Now().UTC(),
	}
	if err := r.save(spec.AgentID, rec); err != nil {
		return runtime.Status{}, fmt.Errorf("process runtime: Create %s: %w", spec.AgentID, err)
	}
	return r.status(spec.AgentID, rec), nil
}

// Start implements runtime.Runtime. A running or paused agent is left
// alone (also when a previous Runtime started it); a created or exited one
// is launched, appending to its output.log.
func (r *Runtime) Start(ctx context.Context, agentID string) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	unlock, err := r.lock(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	rec, err := r.load(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	if st := r.status(agentID, rec); st.State == runtime.StateRunning || st.State == runtime.StatePaused {
		return st, nil
	}
	cmd, err := r.launch(agentID, rec)
	if err != nil {
		return runtime.Status{}, fmt.Errorf("process runtime: Start %s: %w", agentID, err)
	}
	go r.reap(agentID, rec.Proc, cmd)
	return r.status(agentID, rec), nil
}

// launch starts the agent's wrapper and records its identity in rec (and
// on disk). Callers hold the agent's lock.
func (r *Runtime) launch(id string, rec *record) (*exec.Cmd, error) {
	spec := rec.Spec
	if len(spec.Command) == 0 {
		return nil, errors.New("empty Command")
	}
	workDir := spec.WorkDir
	if workDir == "" {
		workDir = filepath.Join(r.agentDir(id), "work")
	}
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		return nil, err
	}
	if spec.HomeDir != "" {
		if err := os.MkdirAll(spec.HomeDir, 0o700); err != nil {
			return nil, err
		}
	}
	exitPath := r.path(id, exitFile)
	if err := os.Remove(exitPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out, err := os.OpenFile(r.path(id, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy

	// Record first, then start: the launch nonce is on disk before any
	// process carries it, so a broker killed at any point after this
	// leaves a process that the next Runtime recognises (see reconcile).
	rec.Launch = newLaunchID()
	if err := r.save(id, rec); err != nil {
		return nil, err
	}
	hook("recorded")

	args := append([]string{"-c", wrapperScript, "scion-agent", exitPath}, spec.Command...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Dir = workDir
	cmd.Env = append(agentEnv(spec, workDir), EnvStateDir+"="+r.dir, EnvLaunch+"="+id+"/"+rec.Launch)
	cmd.Stdout = out // a file, not a pipe: the agent outlives the broker
	// A new session: no controlling terminal, and its own process group
	// that Stop/Suspend can signal as a whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Taken before the launch: the process starts at or after StartedAt.
	startedAt := time.Now().UTC()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	hook("started")
	// Our unreaped child cannot vanish from /proc before Wait, so this
	// cannot race with a fast exit.
	p, err := identify(cmd.Process.Pid)
	if err == nil {
		rec.Proc = p
		rec.StartedAt = startedAt
		err = r.save(id, rec)
	}
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return nil, err
	}
	return cmd, nil
}

// agentEnv is the agent's environment: a minimal PATH and HOME, then
// spec.Env. HomeDir, when set, is HOME whatever Env says.
func agentEnv(spec runtime.Spec, workDir string) []string {
	env := map[string]string{"PATH": defaultPath, "HOME": workDir}
	maps.Copy(env, spec.Env)
	if spec.HomeDir != "" {
		env["HOME"] = spec.HomeDir
	}
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// reap waits for a wrapper this Runtime started, records its status if the
// wrapper could not (it was SIGKILLed) and reports the exit. It runs even
// after Close, so that no zombie is left behind.
func (r *Runtime) reap(id string, p procID, cmd *exec.Cmd) {
	_ = cmd.Wait()
	code := exitCode(cmd.ProcessState)
	unlock, err := r.lock(id)
	if err != nil {
		return // deleted
	}
	defer unlock()
	rec, err := r.load(id)
	if err != nil || rec.Proc != p {
		return // deleted, or started again already
	}
	r.writeExitIfMissing(id, code)
	r.emit(r.status(id, rec))
}

// exitCode returns the shell-style exit status: the code, or 128+signal.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
