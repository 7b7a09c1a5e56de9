package kubernetes_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// serveExec answers the API server's exec upgrade, as a kubelet does:
// POST /exec/NS/POD/CONTAINER?command=...&input=1&output=1&error=1 over
// SPDY with the v4 channel protocol (the API server translates a
// client's WebSocket exec into this). The command runs locally in the
// pod's working directory, its exit status goes back on the error stream.
func (k *localKubelet) serveExec(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/exec/"), "/")
	if len(parts) != 3 || parts[0] != k.n.name || parts[2] != "agent" {
		http.NotFound(w, r)
		return
	}
	k.mu.Lock()
	p := k.byName[parts[1]]
	k.mu.Unlock()
	q := r.URL.Query()
	args := q["command"]
	if p == nil || len(args) == 0 {
		http.NotFound(w, r)
		return
	}
	if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
		return // Handshake has answered
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
		streams <- s
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	want := 1 // error
	for _, f := range []string{"input", "output", "error"} {
		if q.Get(f) == "1" {
			want++
		}
	}
	got := map[string]httpstream.Stream{}
	deadline := time.After(10 * time.Second)
	for len(got) < want {
		select {
		case s := <-streams:
			got[s.Headers().Get(corev1.StreamType)] = s
		case <-deadline:
			k.t.Errorf("kubelet: exec: %d of %d streams", len(got), want)
			return
		}
	}
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
	b, _ := json.Marshal(status)
	errStream := got[corev1.StreamTypeError]
	errStream.Write(b)
	for _, s := range got {
		s.Close()
	}
}
