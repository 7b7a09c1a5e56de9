package broker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/wire"
)

// jobOutbox keeps each Job's latest unacknowledged update. Updates are
// whole states and the latest wins, so a Job whose updates pile up while
// the control channel is down costs one entry, and the next session sends
// the newest. Fields that mean "no news" when empty (logs, trace, result,
// times, exit code, error) are carried over from the update they replace,
// and a terminal update is never replaced by a later non-terminal one.
//
// A terminal update is also written to dir until the Hub acknowledges it:
// a Job that finished while the channel was down and the broker then
// restarted is not among the running Jobs the next start follows again,
// so its end would otherwise never reach the Hub. Non-terminal updates
// are not kept on disk: the resumed follow makes new ones.
type jobOutbox struct {
	dir     string // "" keeps nothing on disk
	log     *slog.Logger
	mu      sync.Mutex
	pending map[string]*outboxEntry
	wake    chan struct{} // one slot: "something changed"
}

type outboxEntry struct {
	U       wire.JobUpdate `json:"update"`
	Cluster string         `json:"cluster"` // for the log lines
	seq     uint64         // bumped by every put, so a send acks only what it sent
}

// newJobOutbox is an outbox that keeps terminal updates in dir, loading
// those a previous run left there.
func newJobOutbox(dir string, log *slog.Logger) *jobOutbox {
	o := &jobOutbox{dir: dir, log: log, pending: map[string]*outboxEntry{}, wake: make(chan struct{}, 1)}
	if dir == "" {
		return o
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var oe outboxEntry
		if err == nil {
			err = json.Unmarshal(b, &oe)
		}
		if err != nil || oe.U.JobID+".json" != e.Name() || !oe.U.State.Terminal() {
			log.Warn("job outbox: unreadable entry ignored", "file", e.Name(), "err", err)
			continue
		}
		oe.seq = 1
		o.pending[oe.U.JobID] = &oe
		log.Info("job outbox: a terminal update of the last run to deliver", "cluster", oe.Cluster, "job", oe.U.JobID, "state", oe.U.State)
	}
	return o
}

// file is where a Job's terminal update is kept, or "" for none (an ID
// that is not a safe file name is kept in memory only).
func (o *jobOutbox) file(id string) string {
	if o.dir == "" || workspace.ValidID("job ID", id) != nil {
		return ""
	}
	return filepath.Join(o.dir, id+".json")
}

// put queues u as its Job's latest update.
func (o *jobOutbox) put(cluster string, u wire.JobUpdate) {
	// Every report to the Hub passes here: a spoke's error text (client-go
	// quotes URLs) must not carry a proxy's or server's userinfo into the
	// ledger.
	u.Message = api.RedactURLs(u.Message)
	if u.Error != nil {
		je := *u.Error
		je.Message = api.RedactURLs(je.Message)
		u.Error = &je
	}
	o.mu.Lock()
	e := o.pending[u.JobID]
	if e != nil {
		e.U = mergeUpdate(e.U, u)
		e.seq++
	} else {
		e = &outboxEntry{U: u, Cluster: cluster, seq: 1}
		o.pending[u.JobID] = e
	}
	if f := o.file(u.JobID); f != "" && e.U.State.Terminal() {
		b, err := json.Marshal(e)
		if err == nil {
			err = os.MkdirAll(o.dir, 0o700)
		}
		if err == nil {
			err = config.WriteFileAtomic(f, b, 0o600)
		}
		if err != nil {
			o.log.Warn("job outbox: terminal update not kept on disk", "cluster", cluster, "job", u.JobID, "err", err)
		}
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
	if m.Where == nil {
		m.Where = older.Where
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
	sort.Slice(out, func(i, j int) bool { return out[i].U.JobID < out[j].U.JobID })
	return out
}

// ack drops a Job's entry if it is still the one that was sent.
func (o *jobOutbox) ack(id string, seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.pending[id]; e != nil && e.seq == seq {
		delete(o.pending, id)
		if f := o.file(id); f != "" && e.U.State.Terminal() {
			_ = os.Remove(f)
		}
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
				err := conn.Call(cctx, wire.MethodJobUpdate, e.U, nil)
				cancel()
				log := b.jobLog(e.Cluster, e.U.JobID)
				var ae *api.Error
				switch {
				case err == nil:
					o.ack(e.U.JobID, e.seq)
				case errors.As(err, &ae) && api.StatusForCode(ae.Code) < 500 && !errors.Is(err, wire.ErrClosed):
					log.Warn("job update refused by the hub; dropped", "state", e.U.State, "err", err)
					o.ack(e.U.JobID, e.seq)
				default:
					log.Debug("job update not delivered; kept for resend", "state", e.U.State, "err", err)
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
