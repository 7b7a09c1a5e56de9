package channel

import (
	"context"
	"log/slog"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/wire"
)

// Dispatcher sends commands to brokers over their current sessions.
type Dispatcher struct {
	Sessions *Registry
	Log      *slog.Logger
	// Timeout bounds one command whose caller set no deadline.
	Timeout time.Duration
	// Observe records one command's time and outcome (an api code, or
	// "ok") in the Hub's metrics.
	Observe func(method, outcome string, took time.Duration)
	// Resend is asked before a keyed command is sent again on the
	// broker's next session; an error refuses the resend and is the
	// command's answer (the Hub runs plan.Reach again for a pinned
	// agent there).
	Resend func(ctx context.Context, req any) error
	// Closing is closed when the Hub closes: no broker reconnects to it
	// then, so nothing waits for one.
	Closing <-chan struct{}
}

// Online reports whether the broker has a live channel to this Hub.
func (d *Dispatcher) Online(brokerID string) bool { return d.Sessions.Get(brokerID) != nil }

// Dispatch sends one command to a broker and waits for its answer, bounded
// by Timeout. An offline broker is an immediate typed error.
//
// A keyed command whose answer is lost with the channel (the broker may
// or may not have acted) is sent again with the same key once the broker
// is back, within the same deadline: the broker answers a key it has
// already run from its record, so the effect happens once. Commands wait
// for the session to be ready (its queued dispatches delivered) first.
func (d *Dispatcher) Dispatch(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return d.dispatch(ctx, brokerID, method, req, resp, key, false)
}

// DispatchSettled is Dispatch for a keyed command whose outcome the Hub
// must learn before it answers its caller, because the caller has no key
// to ask again with (job.run: the Hub named the Job, and a retry of the
// user's would be another Job). An answer lost with the channel is sent
// again on the broker's next session even when the channel's end marked
// the broker offline, until ctx ends: the broker answers it from its
// record, so the effect is known and happens once. The price is a caller
// that waits out ctx for a broker that never comes back.
func (d *Dispatcher) DispatchSettled(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return d.dispatch(ctx, brokerID, method, req, resp, key, true)
}

// dispatch is Dispatch; throughOffline resends a keyed command whose
// answer was lost when the broker went offline too (DispatchSettled).
func (d *Dispatcher) dispatch(ctx context.Context, brokerID, method string, req, resp any, key string, throughOffline bool) error {
	sess := d.Sessions.Get(brokerID)
	if sess == nil {
		return api.Errorf(api.CodeBrokerOffline, "the agent's runtime broker is offline; try again when it reconnects")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	for {
		err := d.call(ctx, sess, method, req, resp, key)
		if err == nil || key == "" || !plan.LostReply(err) || (plan.WentOffline(err) && !throughOffline) || ctx.Err() != nil {
			return err
		}
		next := d.nextSession(ctx, sess)
		if next == nil {
			return err
		}
		if rerr := d.Resend(ctx, req); rerr != nil {
			return rerr
		}
		d.Log.Info("resending a command whose answer was lost", "broker_id", brokerID, "method", method, "key", key)
		sess = next
	}
}

// call sends one command on one session, once it is ready.
func (d *Dispatcher) call(ctx context.Context, sess *Session, method string, req, resp any, key string) error {
	if err := sess.WaitReady(ctx); err != nil {
		return err
	}
	start := time.Now()
	var opts []wire.CallOption
	if key != "" {
		opts = append(opts, wire.WithKey(key))
	}
	err := Err(ctx, sess, sess.Conn.Call(ctx, method, req, resp, opts...))
	outcome := "ok"
	if err != nil {
		outcome = api.AsError(err).Code
	}
	d.Observe(method, outcome, time.Since(start))
	return err
}

// WaitReady waits until sess has delivered the dispatches queued for its
// broker. A session that ends meanwhile is returned to the caller, whose
// call then fails as unavailable.
func (sess *Session) WaitReady(ctx context.Context) error {
	select {
	case <-sess.ready:
		return nil
	default:
	}
	select {
	case <-sess.ready:
	case <-sess.Conn.Done():
	case <-ctx.Done():
		return api.Errorf(api.CodeBrokerUnavailable,
			"the runtime broker is still receiving the commands queued while it was offline; try again")
	}
	return nil
}

// Err is what a call or stream on sess that failed with err answers:
// when the channel closed under it and the Hub marked the broker offline
// for that, runtime_broker_offline at once, whatever was pending (a
// create, a stop, the first lines of logs), instead of a resend that
// would wait for a broker that may never come back. The message says the
// outcome is unknown and names no address.
func Err(ctx context.Context, sess *Session, err error) error {
	if err == nil || !api.IsCode(err, api.CodeBrokerUnavailable) || !sess.EndedOffline(ctx) {
		return err
	}
	return &plan.OfflineLost{Err: api.Errorf(api.CodeBrokerOffline,
		"the runtime broker went offline before answering; whether it acted is settled when it reconnects")}
}

// nextSession waits for the session to resend a command on after one was
// lost on old: the broker's next session, or old itself if it is still up
// (then after a short pause, so a broker that keeps refusing is not
// hammered). nil when ctx ends first, or the Hub is closing (its
// sessions ended by it: no broker reconnects to it).
func (d *Dispatcher) nextSession(ctx context.Context, old *Session) *Session {
	for {
		cur, changed := d.Sessions.Watch(old.BrokerID)
		select {
		case <-old.Conn.Done():
		default:
			if cur == old {
				select {
				case <-time.After(50 * time.Millisecond):
					return old
				case <-ctx.Done():
					return nil
				case <-d.Closing:
					return nil
				}
			}
		}
		if cur != nil && cur != old {
			return cur
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		case <-d.Closing:
			return nil
		}
	}
}

// Live returns the broker's session for a stream (logs, exec, attach)
// once it is ready, or the offline error.
func (d *Dispatcher) Live(ctx context.Context, brokerID string) (*Session, error) {
	sess := d.Sessions.Get(brokerID)
	if sess == nil {
		return nil, api.Errorf(api.CodeBrokerOffline, "the agent's runtime broker is offline")
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	return sess, sess.WaitReady(ctx)
}
