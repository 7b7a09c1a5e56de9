package kubernetes_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// serveLogs answers the API server's GET /containerLogs/NS/POD/CONTAINER.
func (k *localKubelet) serveLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] != k.n.name || parts[2] != "agent" {
		http.NotFound(w, r)
		return
	}
	k.mu.Lock()
	p := k.byName[parts[1]]
	k.mu.Unlock()
	if p == nil {
		http.NotFound(w, r)
		return
	}
	follow := r.URL.Query().Get("follow") == "true"
	fl, _ := w.(http.Flusher)
	off := 0
	if n, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && n >= 0 {
		// As the kubelet does: start at the last n lines of what is there.
		data, _, _ := p.out.snapshot()
		off = tailOffset(data, n)
	}
	for {
		data, changed, finished := p.out.snapshot()
		w.Write(data[off:])
		off = len(data)
		if fl != nil {
			fl.Flush()
		}
		if !follow || finished {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// tailOffset is where the last n lines of data start (a final line without
// a newline counts).
func tailOffset(data []byte, n int) int {
	if n == 0 {
		return len(data)
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if data[i] == '\n' {
			if n--; n == 0 {
				return i + 1
			}
		}
	}
	return 0
}

// logBuffer is a process's output that readers can follow.
type logBuffer struct {
	mu       sync.Mutex
	data     []byte
	changed  chan struct{} // closed and replaced at each write
	finished bool
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	close(b.changed)
	b.changed = make(chan struct{})
	return len(p), nil
}

func (b *logBuffer) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = true
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *logBuffer) snapshot() ([]byte, <-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data, b.changed, b.finished
}
