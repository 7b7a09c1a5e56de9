package tunnel

import (
	"errors"
	"fmt"
)

// Stage is the step of reaching a target through a bastion that failed.
type Stage string

const (
	StageConfig    Stage = "config"
	StageDial      Stage = "dial"      // TCP to the bastion
	StageHandshake Stage = "handshake" // SSH key exchange
	StageHostKey   Stage = "host key"  // the bastion's key is not the pinned one
	StageAuth      Stage = "auth"      // the bastion refused the user or key
	StageChannel   Stage = "channel"   // direct-tcpip to the target
)

// Error says which bastion and which stage failed, so that a Job's typed
// error can name the spoke's tier and what to fix.
type Error struct {
	Bastion string // host:port
	Stage   Stage
	Target  string // the direct-tcpip target, for StageChannel
	Err     error
}

func (e *Error) Error() string {
	if e.Target != "" {
		return fmt.Sprintf("ssh bastion %s: %s to %s: %v", e.Bastion, e.Stage, e.Target, e.Err)
	}
	return fmt.Sprintf("ssh bastion %s: %s: %v", e.Bastion, e.Stage, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrClosed is returned by a Tunnel's methods after Close.
var ErrClosed = errors.New("tunnel closed")

// errDead is why a connection was closed by the keepalive supervisor.
var errDead = errors.New("keepalive: no answer from the bastion")

// hostKeyError is what the host key callback returns, so that a mismatch
// can be told apart from other handshake failures (NewClientConn wraps it
// with %w).
type hostKeyError struct{ msg string }

func (e *hostKeyError) Error() string { return e.msg }

// permanent reports whether retrying a connect cannot help: a wrong host
// key or refused credentials stay wrong until someone edits the fleet file.
func permanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Stage == StageHostKey || e.Stage == StageAuth || e.Stage == StageConfig)
}

// cutShort is what to report of a connect attempt that the caller's
// context ended (cause): the attempt's own error, unless it never reached
// the bastion and an earlier attempt (last) did learn something. A TCP dial
// cut by the deadline, or a wait for another dial's connect, says only that
// time ran out; the earlier "connection refused" is what a user needs to
// fix. A handshake cut by it is news: the bastion took the connection and
// did not speak SSH in time.
func cutShort(attempt, cause, last error) error {
	var e *Error
	if last != nil && (!errors.As(attempt, &e) || e.Stage == StageDial) {
		return cause
	}
	return attempt
}
