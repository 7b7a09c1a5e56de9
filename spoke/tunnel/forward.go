package tunnel

import (
	"io"
	"net"
	"sync"
)

// Forward is a local listener on 127.0.0.1 whose connections are piped
// over direct-tcpip channels to one fixed target.
type Forward struct {
	t      *Tunnel
	target string
	ln     net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// Listen opens a Forward to target (host:port as the bastion resolves it)
// on a free 127.0.0.1 port. A kubeconfig then names
// https://<Forward.Addr()> with tls-server-name set to the real API host.
// Close the Forward, or the Tunnel, to release it.
func (t *Tunnel) Listen(target string) (*Forward, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Forward{t: t, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		ln.Close()
		return nil, &Error{Bastion: t.cfg.Host, Stage: StageDial, Err: ErrClosed}
	}
	t.forwards = append(t.forwards, f)
	t.wg.Add(1)
	t.mu.Unlock()
	go f.serve()
	return f, nil
}

// Addr is the listener's address, 127.0.0.1:<port>.
func (f *Forward) Addr() string { return f.ln.Addr().String() }

func (f *Forward) serve() {
	defer f.t.wg.Done()
	for {
		lc, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		if !f.track(lc) {
			lc.Close()
			return
		}
		f.t.wg.Add(1)
		go f.pipe(lc)
	}
}

// pipe dials the target for one local connection and copies both ways. A
// failed dial closes the local connection: the client sees a reset, as it
// would from an unreachable server.
func (f *Forward) pipe(lc net.Conn) {
	defer f.t.wg.Done()
	defer f.untrack(lc)
	rc, err := f.t.DialContext(f.t.ctx, "tcp", f.target)
	if err != nil {
		return
	}
	if !f.track(rc) {
		rc.Close()
		return
	}
	defer f.untrack(rc)
	// The client's end of writing reaches the target as a half-close, so
	// a request body can end while the answer still flows; the target's
	// end of writing ends the pipe.
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(rc, lc)
		if cw, ok := rc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	io.Copy(lc, rc)
	lc.Close()
	rc.Close()
	<-done
}

func (f *Forward) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forward) untrack(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// Close stops the listener and ends its piped connections.
func (f *Forward) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	conns := f.conns
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	err := f.ln.Close()
	for c := range conns {
		c.Close()
	}
	return err
}
