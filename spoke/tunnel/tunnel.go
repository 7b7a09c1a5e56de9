package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Tunnel reaches targets behind one bastion. It is safe for concurrent use.
type Tunnel struct {
	cfg    Config
	client *ssh.ClientConfig

	ctx    context.Context // cancelled by Close: ends dials, reconnects and pipes
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Tunnel starts

	connecting chan struct{} // a one-slot semaphore: one connect at a time

	mu       sync.Mutex
	cur      *conn
	backoff  time.Duration // the next wait before a reconnect; 0 after a success
	forwards []*Forward
	closed   bool
}

// conn is one SSH connection and its keepalive supervisor.
type conn struct {
	client *ssh.Client
	dead   chan struct{} // closed once the connection is known dead
	once   sync.Once
	why    error
}

func (c *conn) kill(why error) {
	c.once.Do(func() {
		c.why = why
		close(c.dead)
		c.client.Close()
	})
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// New checks cfg and returns a Tunnel. It does not connect: the first
// DialContext does, so that a broker starts even when a bastion is down.
func New(cfg Config) (*Tunnel, error) {
	cfg = cfg.withDefaults()
	cc, err := cfg.clientConfig()
	if err != nil {
		return nil, &Error{Bastion: cfg.Host, Stage: StageConfig, Err: err}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Tunnel{cfg: cfg, client: cc, ctx: ctx, cancel: cancel, connecting: make(chan struct{}, 1)}, nil
}

// DialContext opens a direct-tcpip channel to addr through the bastion. A
// dead connection, or a channel open that fails because the connection
// failed, is replaced by a new one after a backoff, until ctx ends. A
// channel the bastion refuses (the target is unreachable from it, or
// forwarding is forbidden), a wrong host key and refused credentials are
// returned at once: retrying cannot fix them.
func (t *Tunnel) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, &Error{Bastion: t.cfg.Host, Stage: StageChannel, Target: addr, Err: fmt.Errorf("network %q is not supported", network)}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // Close ends every dial in progress
		select {
		case <-t.ctx.Done():
			stop()
		case <-ctx.Done():
		}
	}()
	var last error
	for {
		c, err := t.conn(ctx)
		if err != nil {
			if permanent(err) {
				return nil, t.bounded(ctx, err, last)
			}
			if cause := ended(ctx); cause != nil {
				return nil, t.bounded(ctx, cutShort(err, cause, last), last)
			}
			last = err
			if err := t.wait(ctx); err != nil {
				return nil, t.bounded(ctx, err, last)
			}
			continue
		}
		nc, err := c.dial(ctx, addr)
		if err == nil {
			return nc, nil
		}
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) {
			return nil, &Error{Bastion: t.cfg.Host, Stage: StageChannel, Target: addr, Err: err}
		}
		if ctx.Err() != nil {
			return nil, t.bounded(ctx, ctx.Err(), &Error{Bastion: t.cfg.Host, Stage: StageChannel, Target: addr, Err: err})
		}
		// The connection failed under us: drop it and reconnect.
		c.kill(err)
		last = &Error{Bastion: t.cfg.Host, Stage: StageChannel, Target: addr, Err: err}
	}
}

// dial opens a channel on c, given up when c is found dead: x/crypto/ssh
// can wait forever for the answer to a channel opened just as the
// connection closed (its write still succeeds on a half-closed socket).
func (c *conn) dial(ctx context.Context, addr string) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.dead:
			cancel()
		case <-ctx.Done():
		}
	}()
	nc, err := c.client.DialContext(ctx, "tcp", addr)
	if err != nil && c.isDead() {
		err = fmt.Errorf("connection lost: %w", c.why)
	}
	return nc, err
}

// bounded is the error of a dial that gave up: the context's end, with the
// last connection error, which is what a user needs to fix.
func (t *Tunnel) bounded(ctx context.Context, err, last error) error {
	if t.ctx.Err() != nil {
		return &Error{Bastion: t.cfg.Host, Stage: StageDial, Err: ErrClosed}
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if last != nil && errors.As(last, &e) {
		return &Error{Bastion: e.Bastion, Stage: e.Stage, Target: e.Target, Err: fmt.Errorf("%w (gave up: %w)", e.Err, err)}
	}
	return &Error{Bastion: t.cfg.Host, Stage: StageDial, Err: err}
}

// wait sleeps the current backoff and doubles it, up to BackoffMax.
func (t *Tunnel) wait(ctx context.Context) error {
	t.mu.Lock()
	d := max(t.backoff, t.cfg.BackoffMin)
	t.backoff = min(2*d, t.cfg.BackoffMax)
	t.mu.Unlock()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		// On a loaded machine the timer and ctx's deadline fire together
		// and either may be picked: an attempt begun now could only fail
		// at once with "i/o timeout".
		return ended(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ended is ctx's error, or DeadlineExceeded once its deadline has passed:
// a socket deadline or a timer can fire before ctx's own timer has run.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// conn returns the live connection, connecting when there is none.
func (t *Tunnel) conn(ctx context.Context) (*conn, error) {
	select {
	case t.connecting <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-t.connecting }()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, &Error{Bastion: t.cfg.Host, Stage: StageDial, Err: ErrClosed}
	}
	if c := t.cur; c != nil && !c.isDead() {
		t.mu.Unlock()
		return c, nil
	}
	t.mu.Unlock()

	c, err := t.connect(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.kill(ErrClosed)
		return nil, &Error{Bastion: t.cfg.Host, Stage: StageDial, Err: ErrClosed}
	}
	t.cur, t.backoff = c, 0
	t.wg.Add(1)
	go t.keepalive(c)
	return c, nil
}

// connect dials the bastion and runs the SSH handshake within
// ConnectTimeout and ctx.
func (t *Tunnel) connect(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: -1} // our keepalive is the SSH one
	nc, err := d.DialContext(ctx, "tcp", t.cfg.Host)
	if err != nil {
		return nil, &Error{Bastion: t.cfg.Host, Stage: StageDial, Err: err}
	}
	// The handshake has no context: a deadline on the socket bounds it, and
	// closing the socket ends it when ctx ends first.
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			nc.Close()
		case <-done:
		}
	}()
	sc, chans, reqs, err := ssh.NewClientConn(nc, t.cfg.Host, t.client)
	close(done)
	if err != nil {
		nc.Close()
		// The socket was closed or timed out under the handshake: the
		// socket deadline is ctx's, and may fire just before ctx reports it.
		if cause := ctx.Err(); cause != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			if cause == nil {
				cause = context.DeadlineExceeded
			}
			err = fmt.Errorf("%w (connect timeout %v): %v", cause, t.cfg.ConnectTimeout, err)
		}
		return nil, &Error{Bastion: t.cfg.Host, Stage: handshakeStage(err), Err: err}
	}
	nc.SetDeadline(time.Time{})
	return &conn{client: ssh.NewClient(sc, chans, reqs), dead: make(chan struct{})}, nil
}

// handshakeStage tells a host key or auth refusal from other handshake
// failures. x/crypto/ssh has no type for an auth failure, only its message.
func handshakeStage(err error) Stage {
	var hk *hostKeyError
	switch {
	case errors.As(err, &hk):
		return StageHostKey
	case strings.Contains(err.Error(), "unable to authenticate"):
		return StageAuth
	}
	return StageHandshake
}

// keepalive sends keepalive@openssh.com every KeepaliveInterval and kills
// c once KeepaliveMax of them are unanswered. Any answer, even a refusal
// (OpenSSH refuses unknown global requests), proves the bastion is alive.
func (t *Tunnel) keepalive(c *conn) {
	defer t.wg.Done()
	// Closing the client is what ends a dropped connection; wait ends
	// when it does.
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		c.client.Wait()
		c.kill(errors.New("connection closed"))
	}()
	tick := time.NewTicker(t.cfg.KeepaliveInterval)
	defer tick.Stop()
	answered := make(chan struct{}, 1)
	unanswered := 0
	for {
		select {
		case <-c.dead:
			return
		case <-t.ctx.Done():
			c.kill(ErrClosed)
			return
		case <-answered:
			unanswered = 0
		case <-tick.C:
			if unanswered >= t.cfg.KeepaliveMax {
				c.kill(errDead)
				return
			}
			unanswered++
			t.wg.Add(1)
			go func() { // ends with an answer or with the connection
				defer t.wg.Done()
				if _, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil); err == nil {
					select {
					case answered <- struct{}{}:
					default:
					}
				}
			}()
		}
	}
}

// Close ends the connection, every Forward and every pipe, and waits for
// the Tunnel's goroutines.
func (t *Tunnel) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	fw := t.forwards
	t.mu.Unlock()
	t.cancel()
	for _, f := range fw {
		f.Close()
	}
	t.wg.Wait()
	t.mu.Lock()
	if t.cur != nil {
		t.cur.kill(ErrClosed)
	}
	t.mu.Unlock()
	return nil
}

// Algorithms are what the live connection negotiated (cipher, MAC, key
// exchange, host key); false when there is none. For diagnostics and the
// benchmark, which reports the cipher each side used.
func (t *Tunnel) Algorithms() (ssh.NegotiatedAlgorithms, bool) {
	t.mu.Lock()
	c := t.cur
	t.mu.Unlock()
	if c == nil || c.isDead() {
		return ssh.NegotiatedAlgorithms{}, false
	}
	am, ok := c.client.Conn.(ssh.AlgorithmsConnMetadata)
	if !ok {
		return ssh.NegotiatedAlgorithms{}, false
	}
	return am.Algorithms(), true
}
