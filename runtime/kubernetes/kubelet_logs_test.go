package kubernetes_test

import (
	"net/http"
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
