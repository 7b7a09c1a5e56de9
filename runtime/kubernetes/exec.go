package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/scion-go/scion/runtime"
)

// Exec implements runtime.Execer through the API server's pods/exec, over
// WebSockets, falling back to SPDY for an older API server. The kubelet of
// the pod's node runs the command. A pod that is still pending (the agent
// is "running" from Start on) is waited for until its container runs, or
// ctx ends. Kubernetes exec has no environment or
// working directory of its own, so ExecRequest.Env and WorkDir are passed
// through env(1) ("env -C DIR K=V... CMD"), which the image must have.
func (r *Runtime) Exec(ctx context.Context, agentID string, req runtime.ExecRequest) (int, error) {
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return -1, err
	}
	pod, err := r.runningPod(ctx, t, rec)
	if err != nil {
		return -1, err
	}
	cmd := execCommand(req)
	u := t.client.CoreV1().RESTClient().Post().Namespace(t.key.namespace).Resource("pods").Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: "agent", Command: cmd, Stdin: req.Stdin != nil, Stdout: true, Stderr: !req.TTY, TTY: req.TTY,
	}, scheme.ParameterCodec).URL()
	ex, err := executor(t, u)
	if err != nil {
		return -1, err
	}
	opts := remotecommand.StreamOptions{Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, Tty: req.TTY}
	if req.Resize != nil {
		opts.TerminalSizeQueue = sizeQueue{ctx: ctx, ch: req.Resize}
	}
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.Code, nil
	}
	return -1, fmt.Errorf("kubernetes runtime: exec in %s: %w", agentID, err)
}

// runningPod is the agent's pod once its container runs: a pending pod
// is waited for; no pod, or one that has ended, is an error.
func (r *Runtime) runningPod(ctx context.Context, t *target, rec *corev1.ConfigMap) (*corev1.Pod, error) {
	pod, err := r.currentPod(ctx, t, rec)
	if err != nil {
		return nil, err
	}
	if pod != nil && ownedBy(pod, rec) && pod.Status.Phase == corev1.PodPending && pod.DeletionTimestamp == nil {
		if pod, err = r.waitStarted(ctx, t, pod); err != nil {
			return nil, err
		}
	}
	if pod == nil || !ownedBy(pod, rec) || pod.Status.Phase != corev1.PodRunning {
		return nil, fmt.Errorf("kubernetes runtime: agent %s is not running", rec.Labels["scion.agent_id"])
	}
	return pod, nil
}

// executor streams to a pods/exec or pods/attach URL over WebSockets,
// falling back to SPDY where the API server cannot upgrade to them.
func executor(t *target, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(t.config, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(t.config, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// execCommand prefixes req.Cmd with env(1) when it needs an environment
// or a working directory.
func execCommand(req runtime.ExecRequest) []string {
	if len(req.Env) == 0 && req.WorkDir == "" {
		return req.Cmd
	}
	cmd := []string{"env"}
	if req.WorkDir != "" {
		cmd = append(cmd, "-C", req.WorkDir)
	}
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd = append(cmd, k+"="+req.Env[k])
	}
	return append(cmd, req.Cmd...)
}

// sizeQueue adapts ExecRequest.Resize to remotecommand's queue.
type sizeQueue struct {
	ctx context.Context
	ch  <-chan runtime.TermSize
}

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s, ok := <-q.ch:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Cols, Height: s.Rows}
	case <-q.ctx.Done():
		return nil
	}
}
