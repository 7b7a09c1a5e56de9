package kubernetes_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// serveExec answers the API server's exec upgrade, as a kubelet does:
// POST /exec/NS/POD/CONTAINER?command=...&input=1&output=1&error=1 over
// SPDY with the v4 channel protocol (the API server translates a
// client's WebSocket exec into this). The command runs locally in the
// pod's working directory, its exit status goes back on the error stream.
func (k *localKubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	p, got, conn := k.upgrade(w, r, "/exec/")
	if conn == nil {
		return
	}
	defer conn.Close()
	args := r.URL.Query()["command"]
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ()[:0:0], "PATH="+os.Getenv("PATH"))
	if s := got[corev1.StreamTypeStdin]; s != nil {
		cmd.Stdin = s
	}
	if s := got[corev1.StreamTypeStdout]; s != nil {
		cmd.Stdout = s
	}
	if s := got[corev1.StreamTypeStderr]; s != nil {
		cmd.Stderr = s
	}
	status := metav1.Status{Status: metav1.StatusSuccess}
	if err := cmd.Run(); err != nil {
		status = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status.Reason = "NonZeroExitCode"
			status.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(exit.ExitCode())}}}
		}
	}
	finishStreams(got, status)
}

// serveAttach answers an attach upgrade: what the client sends goes to the
// agent process's standard input (which stays open when the client goes),
// its output from now on comes back, until it exits or the client leaves.
func (k *localKubelet) serveAttach(w http.ResponseWriter, r *http.Request) {
	p, got, conn := k.upgrade(w, r, "/attach/")
	if conn == nil {
		return
	}
	defer conn.Close()
	if s := got[corev1.StreamTypeStdin]; s != nil && p.stdin != nil {
		go io.Copy(p.stdin, s)
	}
	out := got[corev1.StreamTypeStdout]
	data, _, _ := p.out.snapshot()
	off := len(data)
	for {
		data, changed, finished := p.out.snapshot()
		if out != nil && off < len(data) {
			if _, err := out.Write(data[off:]); err != nil {
				return
			}
		}
		off = len(data)
		if finished {
			finishStreams(got, metav1.Status{Status: metav1.StatusSuccess})
			return
		}
		select {
		case <-changed:
		case <-conn.CloseChan():
			return
		case <-r.Context().Done():
			return
		}
	}
}

// upgrade checks an exec or attach request, negotiates the v4 channel
// protocol, upgrades to SPDY and collects the streams the request asked
// for. A nil connection means it has answered the request itself.
func (k *localKubelet) upgrade(w http.ResponseWriter, r *http.Request, prefix string) (*localProc, map[string]httpstream.Stream, httpstream.Connection) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, prefix), "/")
	if len(parts) != 3 || parts[0] != k.n.name || parts[2] != "agent" {
		http.NotFound(w, r)
		return nil, nil, nil
	}
	k.mu.Lock()
	p := k.byName[parts[1]]
	k.mu.Unlock()
	q := r.URL.Query()
	if p == nil || (prefix == "/exec/" && len(q["command"]) == 0) {
		http.NotFound(w, r)
		return nil, nil, nil
	}
	if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
		return nil, nil, nil // Handshake has answered
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return nil, nil, nil
	}
	want := 1 // error
	for _, f := range []string{"input", "output", "error"} {
		if q.Get(f) == "1" {
			want++
		}
	}
	if q.Get("tty") == "1" {
		want++ // resize
		if q.Get("error") == "1" {
			want-- // a terminal has no separate stderr
		}
	}
	got := map[string]httpstream.Stream{}
	deadline := time.After(10 * time.Second)
	for len(got) < want {
		select {
		case s := <-streams:
			got[s.Headers().Get(corev1.StreamType)] = s
		case <-deadline:
			k.t.Errorf("kubelet: %s: %d of %d streams", prefix, len(got), want)
			conn.Close()
			return nil, nil, nil
		}
	}
	return p, got, conn
}

// finishStreams reports status on the error stream and closes them all.
func finishStreams(got map[string]httpstream.Stream, status metav1.Status) {
	b, _ := json.Marshal(status)
	if s := got[corev1.StreamTypeError]; s != nil {
		s.Write(b)
	}
	for _, s := range got {
		s.Close()
	}
}
