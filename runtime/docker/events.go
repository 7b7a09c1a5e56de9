package docker

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/scion-go/scion/runtime"
)

// eventSource subscribes to the engine's container events since a time.
// The stream ends with an error on errs (io.EOF when the engine closes
// it); it is a parameter so that tests can break it.
type eventSource func(ctx context.Context, since time.Time) (<-chan events.Message, <-chan error)

// Reconnection backoff of the event stream.
const (
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 5 * time.Second
)

// deletingTTL is how long a container removed by Delete is remembered, to
// tell its destroy event from a removal behind the broker's back.
const deletingTTL = time.Minute

// watchedActions are the engine events that change an agent's state.
var watchedActions = []events.Action{
	events.ActionStart, events.ActionDie, events.ActionPause, events.ActionUnPause, events.ActionDestroy,
}

// engineEvents is the real eventSource: this broker's container events.
func (r *Runtime) engineEvents(ctx context.Context, since time.Time) (<-chan events.Message, <-chan error) {
	args := filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("label", runtime.LabelBrokerID+"="+r.opts.BrokerID),
	)
	for _, a := range watchedActions {
		args.Add("event", string(a))
	}
	return r.cli.Events(ctx, events.ListOptions{
		Since:   fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
		Filters: args,
	})
}

// watch turns engine events into runtime events until ctx ends. When the
// stream breaks (an engine restart, a proxy timeout) it subscribes again
// from the time of the last event it handled, after a backoff, so that
// nothing in between is lost; the engine replays from there, and events
// already handled are skipped. The first subscription starts at since, the
// Runtime's creation, so that events racing the subscription are not lost
// either (this assumes the engine's clock roughly agrees with ours).
func (r *Runtime) watch(ctx context.Context, src eventSource, since time.Time) {
	var seen seenEvents
	backoff := reconnectMin
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		msgs, errs := src(sctx, since)
	stream:
		for {
			select {
			case <-ctx.Done():
				break stream
			case <-errs:
				break stream
			case m := <-msgs:
				backoff = reconnectMin
				if !seen.add(m) {
					continue
				}
				since = time.Unix(0, m.TimeNano)
				r.handleEvent(ctx, m)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, reconnectMax)
	}
}

// seenEvents recognises events replayed after a resubscription: those
// older than the newest handled, and those at its very nanosecond that
// were handled already.
type seenEvents struct {
	last int64
	keys map[string]bool // events at last
}

func (s *seenEvents) add(m events.Message) bool {
	key := m.Actor.ID + "/" + string(m.Action)
	switch {
	case m.TimeNano < s.last:
		return false
	case m.TimeNano == s.last:
		if s.keys[key] {
			return false
		}
	default:
		s.last, s.keys = m.TimeNano, map[string]bool{}
	}
	s.keys[key] = true
	return true
}

// handleEvent reports the container's current state: inspected rather than
// taken from the event, so that a status never claims less than the engine
// knows (the exit code and time of a die, say).
func (r *Runtime) handleEvent(ctx context.Context, m events.Message) {
	attrs := m.Actor.Attributes
	if attrs[runtime.LabelAgentID] == "" {
		return
	}
	if m.Action == events.ActionDestroy {
		if r.wasDeleted(m.Actor.ID) {
			return
		}
		labels := maps.Clone(attrs)
		delete(labels, "image")
		delete(labels, "name")
		r.emit(runtime.Status{
			AgentID: attrs[runtime.LabelAgentID],
			RunID:   attrs[runtime.LabelRunID],
			State:   runtime.StateMissing,
			Labels:  labels,
			Message: "container " + attrs["name"] + " was removed outside the broker",
		})
		return
	}
	c, err := r.cli.ContainerInspect(ctx, m.Actor.ID)
	if err != nil {
		// Removed since (a Delete kills, then removes): the destroy
		// event tells. Other errors: the next event or Inventory will.
		return
	}
	r.emit(r.status(ctx, c))
}

// markDeleting records that Delete removes container id.
func (r *Runtime) markDeleting(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for k, t := range r.deleting {
		if now.Sub(t) > deletingTTL {
			delete(r.deleting, k)
		}
	}
	r.deleting[id] = now
}

func (r *Runtime) wasDeleted(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.deleting[id]
	return ok
}
