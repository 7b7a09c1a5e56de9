package kubernetes

import (
	"context"
	"errors"
	"io"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/scion-go/scion/runtime"
)

var _ runtime.Attacher = (*Runtime)(nil)

// Attach implements runtime.Attacher through the API server's pods/attach
// (the kubelet connects to the agent container's main process); a pod
// still pending is waited for, as Exec does. The
// container keeps its standard input open across attachments (stdinOnce
// is false), so detaching, or CloseWrite, never ends the agent.
func (r *Runtime) Attach(ctx context.Context, agentID string) (runtime.Attachment, error) {
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return nil, err
	}
	pod, err := r.runningPod(ctx, t, rec)
	if err != nil {
		return nil, err
	}
	tty := pod.Spec.Containers[0].TTY
	u := t.client.CoreV1().RESTClient().Post().Namespace(t.key.namespace).Resource("pods").Name(pod.Name).
		SubResource("attach").VersionedParams(&corev1.PodAttachOptions{
		Container: "agent", Stdin: true, Stdout: true, Stderr: !tty, TTY: tty,
	}, scheme.ParameterCodec).URL()
	ex, err := executor(t, u)
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithCancel(ctx)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &attachment{tty: tty, in: inW, out: outR, cancel: cancel, sizes: make(chan runtime.TermSize, 4), done: make(chan struct{})}
	opts := remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: tty}
	if tty {
		opts.TerminalSizeQueue = sizeQueue{ctx: actx, ch: a.sizes}
	} else {
		opts.Stderr = outW
	}
	go func() {
		defer close(a.done)
		err := ex.StreamWithContext(actx, opts)
		inR.Close()
		if err == nil {
			err = io.EOF // the agent exited
		}
		outW.CloseWithError(err)
	}()
	return a, nil
}

// attachment is a live pods/attach stream.
type attachment struct {
	tty    bool
	in     *io.PipeWriter
	out    *io.PipeReader
	cancel context.CancelFunc
	sizes  chan runtime.TermSize
	done   chan struct{}
	once   sync.Once
}

func (a *attachment) Read(p []byte) (int, error)  { return a.out.Read(p) }
func (a *attachment) Write(p []byte) (int, error) { return a.in.Write(p) }
func (a *attachment) CloseWrite() error           { return a.in.Close() }
func (a *attachment) TTY() bool                   { return a.tty }

// Resize sends a terminal size; without a terminal it does nothing.
func (a *attachment) Resize(ctx context.Context, size runtime.TermSize) error {
	if !a.tty {
		return nil
	}
	select {
	case a.sizes <- size:
		return nil
	case <-a.done:
		return errors.New("kubernetes runtime: attachment closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close detaches; the agent keeps running.
func (a *attachment) Close() error {
	a.once.Do(func() {
		a.cancel()
		a.in.Close()
		<-a.done
	})
	return nil
}
