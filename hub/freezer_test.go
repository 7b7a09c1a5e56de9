package hub_test

import (
	"net"
	"sync"
	"testing"
)

// freezer is a loopback TCP proxy whose connections can be frozen the way
// SIGSTOP freezes a broker process: the sockets stay open, but nothing
// moves either way, not even a close, until thaw.
type freezer struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	thawed chan struct{} // closed while not frozen
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	t.Cleanup(func() { f.thaw(); _ = ln.Close() })
	go f.serve()
	return f
}

func (f *freezer) URL() string { return "http://" + f.ln.Addr().String() }

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
		f.thawed = make(chan struct{})
	default:
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
	default:
		close(f.thawed)
	}
}

// gate waits while frozen.
func (f *freezer) gate() {
	f.mu.Lock()
	ch := f.thawed
	f.mu.Unlock()
	<-ch
}

func (f *freezer) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			u, err := net.Dial("tcp", f.target)
			if err != nil {
				_ = c.Close()
				return
			}
			var once sync.Once
			end := func() { once.Do(func() { _ = c.Close(); _ = u.Close() }) }
			go f.pipe(u, c, end)
			f.pipe(c, u, end)
		}()
	}
}

// pipe copies src to dst through the gate; the end of either side, once
// the gate lets it through, ends both.
func (f *freezer) pipe(dst, src net.Conn, end func()) {
	defer end()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		f.gate()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
