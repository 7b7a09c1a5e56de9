package broker

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// eventTimeout bounds forwarding one runtime event to the Hub: the wait
// for the agent's lock, then the call.
const eventTimeout = 5 * time.Second

// errAgentBusy is currentStatus's error when a command held the agent's
// lock until its ctx ended.
var errAgentBusy = errors.New("a command holds the agent")

// currentStatus re-reads an agent's state under its lock: an event may
// have been queued before a command that changed the state again, and
// what the Hub needs is the newest state with a stamp that orders it.
//
// When it cannot, it reports nothing: errAgentBusy if the lock was still
// held when ctx ended, the runtime's error if it cannot say. The event's
// own state may be older than the command's, and stamped now it would
// look newer: the exited event of a restart's stop, sent so while the
// restart held the lock past eventTimeout on a loaded host, turned the
// Hub's running agent to stopped and gave up its slot; the restart's
// answer made it running again, but the slot stayed given up
// (TestDockerTenAgentsFourModes: "the Hub counts 9 running agents, want
// 10").
func (b *Broker) currentStatus(ctx context.Context, ev runtime.Status) (wire.AgentStatus, error) {
	unlock, err := b.locks.lock(ctx, ev.AgentID)
	if err != nil {
		return wire.AgentStatus{}, errAgentBusy
	}
	defer unlock()
	return b.statusLocked(ctx, ev)
}

// statusLocked is currentStatus for a caller that holds the agent's lock.
func (b *Broker) statusLocked(ctx context.Context, ev runtime.Status) (wire.AgentStatus, error) {
	st, err := b.rt.Inspect(ctx, ev.AgentID)
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		st = runtime.Status{AgentID: ev.AgentID, RunID: ev.RunID, State: runtime.StateMissing, Labels: ev.Labels}
	case err != nil:
		return wire.AgentStatus{}, err
	}
	// An agent that exited by itself gives its ports back.
	b.alignPorts(ctx, ev.AgentID, st)
	return agentStatus(st), nil
}

// reportStatus tells the Hub an agent's current state now, as an event
// would, and returns once the Hub has taken it. Failures are only logged:
// the runtime's events and the next hello's inventory tell it too.
func (b *Broker) reportStatus(ctx context.Context, agentID string) {
	if b.currentConn() == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventTimeout)
	defer cancel()
	st, err := b.currentStatus(cctx, runtime.Status{AgentID: agentID})
	if err != nil {
		return
	}
	b.sendStatus(cctx, st)
}

// sendStatus calls agent.status with its own deadline: one left short by
// a lock wait could be sent already expired, and applied by the Hub
// while the broker counts it failed.
func (b *Broker) sendStatus(ctx context.Context, st wire.AgentStatus) {
	conn := b.currentConn()
	if conn == nil {
		b.log.Debug("runtime event dropped while disconnected", "agent", st.AgentID, "state", st.State)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, eventTimeout)
	defer cancel()
	if err := conn.Call(ctx, wire.MethodAgentStatus, st, nil); err != nil {
		b.log.Warn("forward agent status", "agent", st.AgentID, "state", st.State, "err", err)
	}
}

// reportLater reports agentID's state once the command holding its lock
// is done, read under the lock: the event that found it busy is not
// lost (an exit while an inspect held the lock may be told by nothing
// else before the next hello), and no stale state goes out. One report is
// pending per agent at most; it gives up when ctx (Run's) ends or after
// keyedBudget, the longest a command holds the lock.
func (b *Broker) reportLater(ctx context.Context, agentID string) {
	b.mu.Lock()
	if b.reportsDue == nil {
		b.reportsDue = map[string]bool{}
	}
	if b.reportsDue[agentID] {
		b.mu.Unlock()
		return
	}
	b.reportsDue[agentID] = true
	b.mu.Unlock()
	b.later.Go(func() {
		defer func() {
			b.mu.Lock()
			delete(b.reportsDue, agentID)
			b.mu.Unlock()
		}()
		lctx, cancel := context.WithTimeout(ctx, keyedBudget)
		defer cancel()
		unlock, err := b.locks.lock(lctx, agentID)
		if err != nil {
			return
		}
		st, err := b.statusLocked(lctx, runtime.Status{AgentID: agentID})
		unlock()
		if err != nil {
			b.log.Warn("runtime event not forwarded: the agent's state cannot be read", "agent", agentID, "err", err)
			return
		}
		b.sendStatus(ctx, st)
	})
}
