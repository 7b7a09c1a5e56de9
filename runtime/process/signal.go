package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/scion-go/scion/runtime"
)

// killWait bounds the wait for a SIGKILLed process group to die; only a
// process stuck in the kernel (uninterruptible I/O) takes long.
const killWait = 30 * time.Second

// probeInterval is how often a signalled process is checked for having
// reacted. /proc reads are cheap; this mostly bounds added latency.
const probeInterval = 10 * time.Millisecond

// Stop implements runtime.Runtime: SIGTERM (and SIGCONT, so that a paused
// agent sees it) to the agent's process group, then SIGKILL to the group
// if the agent is still alive after grace. If ctx ends during the grace
// period Stop returns ctx's error without escalating; the agent has been
// asked to stop and may still do so.
//
// Only a live agent is signalled: once the wrapper has exited its pid
// may be recycled, so stray processes the agent left in its group
// (daemonised children) are not hunted down.
func (r *Runtime) Stop(ctx context.Context, agentID string, grace time.Duration) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	unlock, err := r.lock(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	rec, err := r.load(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	p := rec.Proc
	alive, err := signalGroup(p, syscall.SIGTERM)
	if err != nil {
		return runtime.Status{}, fmt.Errorf("process runtime: Stop %s: %w", agentID, err)
	}
	if alive {
		signalGroup(p, syscall.SIGCONT)
		if err := waitDead(ctx, p, grace); err != nil {
			if ctx.Err() != nil {
				return runtime.Status{}, ctx.Err()
			}
			if err := r.kill(agentID, p); err != nil {
				return runtime.Status{}, fmt.Errorf("process runtime: Stop %s: %w", agentID, err)
			}
		}
	}
	return r.status(agentID, rec), nil
}

// kill SIGKILLs the agent's process group and waits for it to die. The
// wrapper dies with the agent, unable to record the status, so kill
// records 137 (128+SIGKILL) itself. Callers hold the agent's lock.
func (r *Runtime) kill(id string, p procID) error {
	alive, err := signalGroup(p, syscall.SIGKILL)
	if err != nil || !alive {
		return err
	}
	// Not bounded by the caller's context: having sent SIGKILL we want the
	// death recorded, and it takes milliseconds.
	if err := waitDead(context.Background(), p, killWait); err != nil {
		return fmt.Errorf("pid %d still alive %v after SIGKILL", p.Pid, killWait)
	}
	r.writeExitIfMissing(id, 128+int(syscall.SIGKILL))
	return nil
}

// waitDead polls until p is dead, for at most d.
func waitDead(ctx context.Context, p procID, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if alive, _ := probe(p); !alive {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d still alive after %v", p.Pid, d)
		}
		time.Sleep(probeInterval)
	}
}

// Suspend implements runtime.Runtime: SIGSTOP to the agent's process
// group. It returns once the agent is seen stopped.
func (r *Runtime) Suspend(ctx context.Context, agentID string) (runtime.Status, error) {
	return r.pause(ctx, agentID, "Suspend", syscall.SIGSTOP, true)
}

// Resume implements runtime.Runtime: SIGCONT to the agent's process group.
func (r *Runtime) Resume(ctx context.Context, agentID string) (runtime.Status, error) {
	return r.pause(ctx, agentID, "Resume", syscall.SIGCONT, false)
}

// pause sends sig to a live agent and waits (briefly) until its stopped
// state is wantStopped, so that the returned status already shows it.
func (r *Runtime) pause(ctx context.Context, agentID, method string, sig syscall.Signal, wantStopped bool) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	unlock, err := r.lock(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	rec, err := r.load(agentID)
	if err != nil {
		return runtime.Status{}, err
	}
	alive, stopped := probe(rec.Proc)
	if !alive {
		return runtime.Status{}, fmt.Errorf("process runtime: %s %s: agent is not running", method, agentID)
	}
	if stopped != wantStopped {
		if _, err := signalGroup(rec.Proc, sig); err != nil {
			return runtime.Status{}, fmt.Errorf("process runtime: %s %s: %w", method, agentID, err)
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
			if alive, stopped := probe(rec.Proc); !alive || stopped == wantStopped {
				break
			}
			time.Sleep(probeInterval)
		}
	}
	return r.status(agentID, rec), nil
}

// Delete implements runtime.Runtime. A live agent is SIGKILLed first (Stop
// it before for a graceful end). The agent's state directory goes, its
// WorkDir and HomeDir stay: they belong to whoever made them. No exit event
// is sent.
func (r *Runtime) Delete(ctx context.Context, agentID string) error {
	if err := r.checkOpen(); err != nil {
		return err
	}
	unlock, err := r.lock(agentID)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := r.load(agentID)
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		return err
	case err != nil:
		// An unreadable record: no process we could identify to kill, but
		// the directory can still go.
	default:
		if err := r.kill(agentID, rec.Proc); err != nil {
			return fmt.Errorf("process runtime: Delete %s: %w", agentID, err)
		}
	}
	// Also whatever else carries the agent's marker: children that left the
	// wrapper's group or outlived it, and processes of a launch whose pid a
	// dying broker never recorded.
	r.killAgentProcs(agentID)
	r.mu.Lock()
	delete(r.watched, agentID)
	r.mu.Unlock()
	// Rename first, so the agent vanishes at once for readers and waiters
	// on the lock, then remove at leisure.
	tomb, err := os.MkdirTemp(r.dir, tombstonePrefix)
	if err != nil {
		return fmt.Errorf("process runtime: Delete %s: %w", agentID, err)
	}
	if err := os.Rename(r.agentDir(agentID), filepath.Join(tomb, "agent")); err != nil {
		os.Remove(tomb)
		return fmt.Errorf("process runtime: Delete %s: %w", agentID, err)
	}
	if err := os.RemoveAll(tomb); err != nil {
		return fmt.Errorf("process runtime: Delete %s: %w", agentID, err)
	}
	return nil
}
