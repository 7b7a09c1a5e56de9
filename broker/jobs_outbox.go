package broker

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// jobOutbox keeps each Job's latest unacknowledged update. Updates are
// whole states and the latest wins, so a Job whose updates pile up while
// the control channel is down costs one entry, and the next session sends
// the newest. Fields that mean "no news" when empty (logs, trace, result,
// times, exit code, error) are carried over from the update they replace,
// and a terminal update is never replaced by a later non-terminal one.
type jobOutbox struct {
	mu      sync.Mutex
	pending map[string]*outboxEntry
	wake    chan struct{} // one slot: "something changed"
}

type outboxEntry struct {
	u       wire.JobUpdate
	cluster string // for the log lines
	seq     uint64 // bumped by every put, so a send acks only what it sent
}

func newJobOutbox() *jobOutbox {
	return &jobOutbox{pending: map[string]*outboxEntry{}, wake: make(chan struct{}, 1)}
}

// put queues u as its Job's latest update.
func (o *jobOutbox) put(cluster string, u wire.JobUpdate) {
	o.mu.Lock()
	if e := o.pending[u.JobID]; e != nil {
		e.u = mergeUpdate(e.u, u)
		e.seq++
	} else {
		o.pending[u.JobID] = &outboxEntry{u: u, cluster: cluster, seq: 1}
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// mergeUpdate is newer over older: newer's state, older's news where
// newer has none; a terminal older stays unless newer is terminal too.
func mergeUpdate(older, newer wire.JobUpdate) wire.JobUpdate {
	if older.State.Terminal() && !newer.State.Terminal() {
		return older
	}
	m := newer
	if m.StartedAt == nil {
		m.StartedAt = older.StartedAt
	}
	if m.FinishedAt == nil {
		m.FinishedAt = older.FinishedAt
	}
	if m.ExitCode == nil {
		m.ExitCode = older.ExitCode
	}
	if m.Result == nil {
		m.Result = older.Result
	}
	if m.Error == nil {
		m.Error = older.Error
	}
	if m.Logs == nil {
		m.Logs = older.Logs
	}
	if m.Trace == nil {
		m.Trace = older.Trace
	}
	return m
}

// snapshot is the pending updates, in Job ID order.
func (o *jobOutbox) snapshot() []outboxEntry {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]outboxEntry, 0, len(o.pending))
	for _, e := range o.pending {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].u.JobID < out[j].u.JobID })
	return out
}

// ack drops a Job's entry if it is still the one that was sent.
func (o *jobOutbox) ack(id string, seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.pending[id]; e != nil && e.seq == seq {
		delete(o.pending, id)
	}
}

// updateTimeout bounds one job.update call.
const updateTimeout = 10 * time.Second

// sendUpdates delivers the outbox to the Hub until ctx ends: at every put
// and after every reconnect. An update the Hub refuses (a 4xx: the Job is
// terminal there, or not this broker's) is dropped, since sending it
// again would be refused again; one lost with the channel stays for the
// next session.
func (b *Broker) sendUpdates(ctx context.Context) {
	o := b.jobs.outbox
	retry := time.NewTimer(0)
	<-retry.C
	for {
		b.mu.Lock()
		conn, changed := b.conn, b.changed
		b.mu.Unlock()
		failed := false
		if conn != nil {
			for _, e := range o.snapshot() {
				cctx, cancel := context.WithTimeout(ctx, updateTimeout)
				err := conn.Call(cctx, wire.MethodJobUpdate, e.u, nil)
				cancel()
				log := b.jobLog(e.cluster, e.u.JobID)
				var ae *api.Error
				switch {
				case err == nil:
					o.ack(e.u.JobID, e.seq)
				case errors.As(err, &ae) && api.StatusForCode(ae.Code) < 500 && !errors.Is(err, wire.ErrClosed):
					log.Warn("job update refused by the hub; dropped", "state", e.u.State, "err", err)
					o.ack(e.u.JobID, e.seq)
				default:
					log.Debug("job update not delivered; kept for resend", "state", e.u.State, "err", err)
					failed = true
				}
				if failed || ctx.Err() != nil {
					break
				}
			}
		}
		if failed {
			// The channel may be dying without having said so yet: try
			// again after a while or at the next session, whichever
			// comes first.
			retry.Reset(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		case <-changed:
		case <-retry.C:
		}
	}
}
