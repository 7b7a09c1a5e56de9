package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// localKubelet plays a node's kubelet for one namespace, so that the
// runtime's process-facing paths run through the real API server: it
// binds pending pods to its Node, runs their agent container's command as
// a local process (the test agent binary), reports running and terminated
// status through pods/status, serves the output to the API server's
// pods/log proxy over HTTPS (the API server dials it as it dials a
// kubelet), and carries out graceful deletion: SIGTERM, the pod's grace
// period, SIGKILL, then the final delete.
//
// A volume mounted with a sub-path is the host directory root/sub-path,
// as an NFS share mounted at root would be; the agent's working directory
// is the host directory of the mount at its WorkingDir.
type localKubelet struct {
	t    *testing.T
	n    ns
	node string
	root string
	srv  *httptest.Server
	// statusOnly runs nothing: pods are bound and reported running (and
	// deleted when asked), as kwok's kubelet does.
	statusOnly bool

	mu     sync.Mutex
	procs  map[types.UID]*localProc
	byName map[string]*localProc // pod name -> its latest process
	acting map[types.UID]bool    // pods being terminated
}

type localProc struct {
	dir   string         // the working directory
	stdin io.WriteCloser // kept open across attachments
	cmd   *exec.Cmd
	out   *logBuffer
	done  chan struct{}
}

func startLocalKubelet(t *testing.T, n ns, root string) *localKubelet {
	t.Helper()
	return newLocalKubelet(t, n, root, false)
}

// startStatusKubelet is a kubelet that runs no process: it binds every
// pod of the namespace to its node and reports its agent container
// running, so that what does not need the agent's process runs as on a
// cluster whose pods come up. Output, exec and exits need
// startLocalKubelet.
func startStatusKubelet(t *testing.T, n ns) *localKubelet {
	t.Helper()
	return newLocalKubelet(t, n, "", true)
}

func newLocalKubelet(t *testing.T, n ns, root string, statusOnly bool) *localKubelet {
	t.Helper()
	k := &localKubelet{t: t, n: n, node: "node-" + n.name, root: root, statusOnly: statusOnly,
		procs: map[types.UID]*localProc{}, byName: map[string]*localProc{}, acting: map[types.UID]bool{}}
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/exec/"):
			k.serveExec(w, r)
			return
		case strings.HasPrefix(r.URL.Path, "/attach/"):
			k.serveAttach(w, r)
			return
		}
		k.serveLogs(w, r)
	}))
	t.Cleanup(k.srv.Close)
	_, portStr, _ := net.SplitHostPort(k.srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	c := ctx(t)
	cl := n.c.Client
	node, err := cl.CoreV1().Nodes().Create(c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.node}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := cl.CoreV1().Nodes().UpdateStatus(c, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	pods := cl.CoreV1().Pods(n.name)
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) { return pods.List(ctx, o) },
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pods.Watch(ctx, o)
			},
		},
		ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { k.sync(obj.(*corev1.Pod)) },
			UpdateFunc: func(_, obj any) { k.sync(obj.(*corev1.Pod)) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if pod, ok := obj.(*corev1.Pod); ok {
					k.kill(pod.UID)
				}
			},
		},
	})
	done := make(chan struct{})
	go func() { ctrl.RunWithContext(wctx); close(done) }()
	t.Cleanup(func() {
		stop()
		<-done
		k.mu.Lock()
		uids := make([]types.UID, 0, len(k.procs))
		for uid := range k.procs {
			uids = append(uids, uid)
		}
		k.mu.Unlock()
		for _, uid := range uids {
			k.kill(uid)
		}
	})
	return k
}

// sync acts on a pod's latest state: bind and run a new one, terminate
// one being deleted.
func (k *localKubelet) sync(pod *corev1.Pod) {
	switch {
	case pod.DeletionTimestamp != nil:
		k.mu.Lock()
		first := !k.acting[pod.UID]
		k.acting[pod.UID] = true
		k.mu.Unlock()
		if first {
			go k.terminate(pod)
		}
	case pod.Spec.NodeName == "":
		err := k.n.c.Client.CoreV1().Pods(pod.Namespace).Bind(context.Background(), &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: k.node},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			k.t.Errorf("kubelet: bind %s: %v", pod.Name, err)
		}
	case pod.Spec.NodeName == k.node && pod.Status.Phase == corev1.PodPending:
		k.mu.Lock()
		_, running := k.procs[pod.UID]
		k.mu.Unlock()
		if !running {
			k.run(pod)
		}
	}
}

// envValue is a variable's value as a kubelet resolves it when it starts
// the container: literal, or from a Secret of the pod's namespace (read
// with the kubelet's own rights, here the fixture's admin).
func (k *localKubelet) envValue(pod *corev1.Pod, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	ref := e.ValueFrom.SecretKeyRef
	if ref == nil {
		return "", fmt.Errorf("variable %s: only secretKeyRef is supported", e.Name)
	}
	sec, err := k.n.c.Client.CoreV1().Secrets(pod.Namespace).Get(context.Background(), ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("variable %s: %w", e.Name, err)
	}
	v, ok := sec.Data[ref.Key]
	if !ok {
		return "", fmt.Errorf("variable %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
	}
	return string(v), nil
}

// run starts the pod's agent container as a local process.
func (k *localKubelet) run(pod *corev1.Pod) {
	if k.statusOnly {
		k.setStatus(pod, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}})
		return
	}
	c := pod.Spec.Containers[0]
	dir := k.root
	for _, m := range c.VolumeMounts {
		if m.MountPath == c.WorkingDir {
			dir = filepath.Join(k.root, m.SubPath)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		k.t.Errorf("kubelet: %v", err)
		return
	}
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		v, err := k.envValue(pod, e)
		if err != nil {
			// A kubelet leaves such a pod pending (CreateContainerConfigError).
			k.t.Errorf("kubelet: pod %s: %v", pod.Name, err)
			return
		}
		cmd.Env = append(cmd.Env, e.Name+"="+v)
	}
	p := &localProc{dir: dir, cmd: cmd, out: newLogBuffer(), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if c.Stdin {
		in, err := cmd.StdinPipe()
		if err != nil {
			k.t.Errorf("kubelet: %v", err)
			return
		}
		p.stdin = in
	}
	k.mu.Lock()
	k.procs[pod.UID] = p
	k.byName[pod.Name] = p
	k.mu.Unlock()
	if err := cmd.Start(); err != nil {
		k.t.Errorf("kubelet: start %s: %v", pod.Name, err)
		return
	}
	started := metav1.Now()
	k.setStatus(pod, corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}})
	go func() {
		err := cmd.Wait()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		phase := corev1.PodSucceeded
		if code != 0 {
			phase = corev1.PodFailed
		}
		k.setStatus(pod, phase, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(code), StartedAt: started, FinishedAt: metav1.Now(), Reason: map[bool]string{true: "Completed", false: "Error"}[code == 0]}})
		p.out.finish()
		close(p.done)
	}()
}

// setStatus writes the pod's phase and agent container state.
func (k *localKubelet) setStatus(pod *corev1.Pod, phase corev1.PodPhase, state corev1.ContainerState) {
	pods := k.n.c.Client.CoreV1().Pods(pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		now := metav1.Now()
		cur.Status.Phase = phase
		if cur.Status.StartTime == nil {
			cur.Status.StartTime = &now
		}
		running := state.Running != nil
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: cur.Spec.Containers[0].Image,
			ImageID: "local", ContainerID: "local://" + string(pod.UID), State: state, Ready: running, Started: &running}}
		_, err = pods.UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		k.t.Errorf("kubelet: status of %s: %v", pod.Name, err)
	}
}

// terminate carries out a graceful deletion: SIGTERM, the grace period,
// SIGKILL; the exit status is written before the pod goes.
func (k *localKubelet) terminate(pod *corev1.Pod) {
	k.mu.Lock()
	p := k.procs[pod.UID]
	k.mu.Unlock()
	if p != nil {
		p.cmd.Process.Signal(syscall.SIGTERM)
		grace := time.Duration(0)
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		select {
		case <-p.done:
		case <-time.After(grace):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	zero := int64(0)
	uid := pod.UID
	err := k.n.c.Client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name,
		metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.t.Errorf("kubelet: final delete of %s: %v", pod.Name, err)
	}
}

// kill ends a force-deleted pod's process at once.
func (k *localKubelet) kill(uid types.UID) {
	k.mu.Lock()
	p := k.procs[uid]
	k.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
}
