package process

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/scion-go/scion/runtime"
)

var _ runtime.Execer = (*Runtime)(nil)

// Exec implements runtime.Execer: the command runs as another local process
// (unsandboxed, like the agent) in the agent's workspace with the agent's
// environment plus req.Env. There is no terminal: TTY only merges stderr
// into stdout. Cancelling ctx kills the command's process group.
func (r *Runtime) Exec(ctx context.Context, agentID string, req runtime.ExecRequest) (int, error) {
	if err := r.checkOpen(); err != nil {
		return 0, err
	}
	if len(req.Cmd) == 0 {
		return 0, errors.New("process runtime: exec needs a command")
	}
	rec, err := r.load(agentID)
	if err != nil {
		return 0, err
	}
	if st := r.status(agentID, rec); st.State != runtime.StateRunning {
		return 0, fmt.Errorf("process runtime: agent %q is %s, not running", agentID, st.State)
	}
	spec := rec.Spec
	spec.Env = maps.Clone(spec.Env)
	if spec.Env == nil {
		spec.Env = map[string]string{}
	}
	maps.Copy(spec.Env, req.Env)
	workDir := spec.WorkDir
	if workDir == "" {
		workDir = filepath.Join(r.agentDir(agentID), "work") // as Start does
	}
	if req.WorkDir != "" {
		workDir = req.WorkDir
	}
	cmd := exec.CommandContext(ctx, req.Cmd[0], req.Cmd[1:]...)
	cmd.Dir = workDir
	// Marked as part of the agent's launch, so that Delete (and a
	// restarted runtime) finds it even if the broker dies mid-exec.
	cmd.Env = append(agentEnv(spec, workDir), EnvStateDir+"="+r.dir, EnvLaunch+"="+agentID+"/"+rec.Launch)
	cmd.Stdin = req.Stdin
	cmd.Stdout, cmd.Stderr = req.Stdout, req.Stderr
	if req.TTY {
		cmd.Stderr = req.Stdout
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ctx.Err() == nil:
		return exitCode(ee.ProcessState), nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	}
	return 0, fmt.Errorf("process runtime: exec %q: %w", req.Cmd[0], err)
}
