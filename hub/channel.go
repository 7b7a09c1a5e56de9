package hub

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// handleConnect is GET /api/v1/runtime-brokers/connect: a broker, with
// signed headers, opens its control channel. The broker is online from its
// hello until the channel ends (peer close, or no frame for
// HeartbeatInterval+Grace).
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	c, ok := s.id.AuthenticateLimited(w, r)
	if !ok {
		return
	}
	if c.Kind != CallerBroker {
		s.id.CountAuthFailure(r)
		httpapi.WriteError(s.log, w, r, api.Unauthorized("the control channel needs broker credentials"))
		return
	}
	conn, err := wire.Accept(w, r, wire.Options{HeartbeatInterval: s.opts.HeartbeatInterval, Grace: s.opts.Grace})
	if err != nil {
		s.log.Warn("control channel upgrade failed", "broker", c.ID, "err", err)
		return
	}
	s.metrics.channels.Inc()
	sess := newSession(uuid.NewString(), c.ID, conn)
	// What a broker sends on its channel is recorded by the Hub itself:
	// the broker authenticated as itself, and what its reports change
	// (any agent it runs, its Jobs) is reconciliation, not a request.
	conn.Handle(wire.MethodHello, func(ctx context.Context, req *wire.Request) (any, error) {
		return s.onHello(authstore.AsSystem(ctx), sess, req)
	})
	conn.Handle(wire.MethodAgentStatus, func(ctx context.Context, req *wire.Request) (any, error) {
		var st wire.AgentStatus
		if err := req.Decode(&st); err != nil {
			return nil, api.BadRequest("bad agent.status body: %v", err)
		}
		// A report that arrived is recorded even if the channel drops
		// meanwhile: the broker will not send it again.
		ctx, cancel := context.WithTimeout(authstore.AsSystem(context.WithoutCancel(ctx)), 10*time.Second)
		defer cancel()
		return struct{}{}, s.applyAgentStatus(ctx, sess.brokerID, st)
	})
	conn.Handle(wire.MethodJobUpdate, func(ctx context.Context, req *wire.Request) (any, error) {
		var u wire.JobUpdate
		if err := req.Decode(&u); err != nil {
			return nil, api.BadRequest("bad job.update body: %v", err)
		}
		// Recorded even if the channel drops meanwhile, as agent.status.
		ctx, cancel := context.WithTimeout(authstore.AsSystem(context.WithoutCancel(ctx)), 10*time.Second)
		defer cancel()
		return struct{}{}, s.jobs.ApplyUpdate(ctx, sess.brokerID, u)
	})
	conn.Handle(wire.MethodInventorySet, func(ctx context.Context, req *wire.Request) (any, error) {
		var inv wire.Inventory
		if err := req.Decode(&inv); err != nil {
			return nil, api.BadRequest("bad inventory body: %v", err)
		}
		return struct{}{}, s.reconcileInventory(authstore.AsSystem(ctx), sess.brokerID, inv.Agents)
	})
	s.log.Info("broker channel opened", "broker", c.Name, "broker_id", c.ID, "session", sess.id)
	// Start the channel and return: net/http then frees the request's
	// state, and the channel's only goroutine is its reader, which halves
	// what an idle broker costs the Hub.
	s.bg.Add(1)
	if err := conn.Start(s.ctx, func(reason error) {
		defer s.bg.Done()
		s.endSession(sess, c.Name, reason)
	}); err != nil {
		s.bg.Done()
		s.log.Error("broker channel", "broker_id", c.ID, "err", err)
	}
}

// endSession runs when a control channel has ended: it marks the broker
// offline unless a newer session has replaced this one.
func (s *Server) endSession(sess *session, name string, reason error) {
	defer close(sess.ended)
	if s.sessions.remove(sess) {
		sess.wentOffline = true
		// Use a fresh context: the request's may be done, and the Hub's is
		// when it closes (the broker is marked offline then too).
		ctx, cancel := context.WithTimeout(authstore.AsSystem(context.Background()), 5*time.Second)
		defer cancel()
		if err := s.store.SetBrokerStatus(ctx, sess.brokerID, api.BrokerOffline, sess.conn.LastSeen().UTC()); err != nil {
			s.log.Error("marking broker offline", "broker_id", sess.brokerID, "err", err)
		}
		s.log.Info("broker offline", "broker", name, "broker_id", sess.brokerID, "reason", reason)
	}
}

// onHello records what the broker announced, reconciles the broker's
// inventory, makes this session current (closing any older one) and starts
// delivering the dispatches queued while the broker was offline.
func (s *Server) onHello(ctx context.Context, sess *session, req *wire.Request) (any, error) {
	var h wire.Hello
	if err := req.Decode(&h); err != nil {
		return nil, api.BadRequest("bad hello: %v", err)
	}
	if err := checkHello(&h, sess.brokerID); err != nil {
		return nil, err
	}
	on, err := s.experimentOn(ctx, api.ExperimentFlatRuntimeBrokers)
	if err != nil {
		return nil, err
	}
	// One read-modify-write of the record, so that an admin's change of
	// the broker's settings in between is neither lost nor undone.
	var was *api.RuntimeTarget
	b, err := s.store.UpdateBrokerWith(ctx, sess.brokerID, func(b *store.Broker) error {
		target, err := helloTarget(b, &h, on)
		if err != nil {
			return err
		}
		was = b.RuntimeTarget
		applyHello(b, &h, target, time.Now().UTC())
		return nil
	})
	if err != nil {
		if ae := (*api.Error)(nil); errors.As(err, &ae) {
			// The broker logs the refusal and says hello again later.
			s.log.Warn("broker hello refused", "broker_id", sess.brokerID, "err", err)
		}
		return nil, err
	}
	s.logTargetChange(b, was)
	// Reconcile before the session becomes current: until then nothing can
	// be dispatched to this broker, so the inventory in the hello cannot be
	// overtaken by a create on the new channel.
	if err := s.reconcileInventory(ctx, sess.brokerID, h.Inventory); err != nil {
		return nil, err
	}
	// The session becomes current now, but not ready: every other
	// command waits (see dispatch) until drainQueue has delivered what was
	// queued, so nothing overtakes a queued stop. The drain runs after
	// the hello is answered rather than inside it: delivering many stops
	// can take longer than the broker waits for its hello, and the broker
	// serves requests as soon as its channel is up.
	if old := s.sessions.put(sess); old != nil && old != sess {
		_ = old.conn.Close("replaced by a new session")
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.drainQueue(sess)
	}()
	s.log.Info("broker online", "broker", b.Name, "broker_id", b.ID, "session", sess.id, "inventory", len(h.Inventory))
	return wire.HelloReply{
		ProtocolVersion:     wire.ProtocolVersion,
		HubVersion:          s.opts.Version,
		SessionID:           sess.id,
		ServerTime:          time.Now().UTC(),
		HeartbeatIntervalMS: s.opts.HeartbeatInterval.Milliseconds(),
	}, nil
}

// checkHello refuses a hello of another protocol version, or one naming
// another broker than the channel authenticated as.
func checkHello(h *wire.Hello, brokerID string) error {
	if h.ProtocolVersion != wire.ProtocolVersion {
		return api.BadRequest("protocol version %d not supported (hub speaks %d)", h.ProtocolVersion, wire.ProtocolVersion)
	}
	if h.BrokerID != "" && h.BrokerID != brokerID {
		return api.Forbidden("hello names broker %s but the channel is authenticated as %s", h.BrokerID, brokerID)
	}
	return nil
}

// applyHello writes into b what its hello h announced (its runtime
// target as helloTarget decided it) and marks it online at now.
func applyHello(b *store.Broker, h *wire.Hello, target *api.RuntimeTarget, now time.Time) {
	b.RuntimeTarget = target
	b.Version, b.ProtocolVersion, b.Runtime = h.Version, h.ProtocolVersion, h.Runtime
	b.Capabilities = h.Capabilities
	if b.Capabilities == nil {
		b.Capabilities = []string{}
	}
	b.Profiles = b.Profiles[:0]
	for _, p := range h.Profiles {
		b.Profiles = append(b.Profiles, api.BrokerProfile{Name: p.Name, Runtime: p.Runtime, Default: p.Default, Settings: p.Settings})
	}
	b.Status, b.LastSeen, b.UpdatedAt = api.BrokerOnline, now, now
}

// logTargetChange says when a flat broker's hello changed the runtime
// target it serves (was: before): its pinned agents are refused until it
// serves theirs again.
func (s *Server) logTargetChange(b *store.Broker, was *api.RuntimeTarget) {
	switch target := b.RuntimeTarget; {
	case was != nil && target == nil:
		s.log.Warn("runtime broker no longer serves a single runtime target; its pinned agents are refused until it does again",
			"broker", b.Name, "broker_id", b.ID, "was", was.String())
	case was != nil && *was != *target:
		s.log.Warn("runtime broker now serves another runtime target; its pinned agents are refused until it serves theirs again",
			"broker", b.Name, "broker_id", b.ID, "was", was.String(), "now", target.String())
	}
}

// dispatch sends one command to a broker and waits for its answer, bounded
// by DispatchTimeout. An offline broker is an immediate typed error.
//
// A keyed command whose answer is lost with the channel (the broker may
// or may not have acted) is sent again with the same key once the broker
// is back, within the same deadline: the broker answers a key it has
// already run from its record, so the effect happens once. Commands wait
// for the session to be ready (its queued dispatches delivered) first.
func (s *Server) dispatch(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return s.dispatchKeyed(ctx, brokerID, method, req, resp, key, false)
}

// dispatchSettled is dispatch for a keyed command whose outcome the Hub
// must learn before it answers its caller, because the caller has no key
// to ask again with (job.run: the Hub named the Job, and a retry of the
// user's would be another Job). An answer lost with the channel is sent
// again on the broker's next session even when the channel's end marked
// the broker offline, until ctx ends: the broker answers it from its
// record, so the effect is known and happens once. The price is a caller
// that waits out ctx for a broker that never comes back.
func (s *Server) dispatchSettled(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return s.dispatchKeyed(ctx, brokerID, method, req, resp, key, true)
}

// dispatchKeyed is dispatch; throughOffline resends a keyed command whose
// answer was lost when the broker went offline too (dispatchSettled).
func (s *Server) dispatchKeyed(ctx context.Context, brokerID, method string, req, resp any, key string, throughOffline bool) error {
	sess := s.sessions.get(brokerID)
	if sess == nil {
		return api.Errorf(api.CodeBrokerOffline, "the agent's runtime broker is offline; try again when it reconnects")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.DispatchTimeout)
		defer cancel()
	}
	for {
		err := s.call(ctx, sess, method, req, resp, key)
		if err == nil || key == "" || !plan.LostReply(err) || (plan.WentOffline(err) && !throughOffline) || ctx.Err() != nil {
			return err
		}
		next := s.nextSession(ctx, sess)
		if next == nil {
			return err
		}
		if rerr := s.checkResend(ctx, req); rerr != nil {
			return rerr
		}
		s.log.Info("resending a command whose answer was lost", "broker_id", brokerID, "method", method, "key", key)
		sess = next
	}
}

// checkResend runs plan.Reach again before a pinned agent's command is
// sent again on the broker's next session: that session's hello may
// declare another target (or none), and the records may have changed
// since the first send's check. Nothing is sent when it refuses.
func (s *Server) checkResend(ctx context.Context, req any) error {
	var agentID string
	switch r := req.(type) {
	case wire.AgentRef:
		if r.Pin != nil {
			agentID = r.AgentID
		}
	case wire.AgentSpec:
		if r.Pin != nil {
			agentID = r.AgentID
		}
	}
	if agentID == "" {
		return nil
	}
	a, err := s.store.GetAgent(ctx, agentID)
	if err != nil {
		return storeerr.Map(err, api.CodeAgentNotFound, "agent")
	}
	return s.checkReach(ctx, a)
}

// call sends one command on one session, once it is ready.
func (s *Server) call(ctx context.Context, sess *session, method string, req, resp any, key string) error {
	if err := waitReady(ctx, sess); err != nil {
		return err
	}
	start := time.Now()
	var opts []wire.CallOption
	if key != "" {
		opts = append(opts, wire.WithKey(key))
	}
	err := s.channelErr(ctx, sess, sess.conn.Call(ctx, method, req, resp, opts...))
	outcome := "ok"
	if err != nil {
		outcome = api.AsError(err).Code
	}
	s.metrics.dispatch.WithLabelValues(method, outcome).Observe(time.Since(start).Seconds())
	return err
}

// waitReady waits until sess has delivered the dispatches queued for its
// broker. A session that ends meanwhile is returned to the caller, whose
// call then fails as unavailable.
func waitReady(ctx context.Context, sess *session) error {
	select {
	case <-sess.ready:
		return nil
	default:
	}
	select {
	case <-sess.ready:
	case <-sess.conn.Done():
	case <-ctx.Done():
		return api.Errorf(api.CodeBrokerUnavailable,
			"the runtime broker is still receiving the commands queued while it was offline; try again")
	}
	return nil
}

// channelErr is what a call or stream on sess that failed with err
// answers: when the channel closed under it and the Hub marked the broker
// offline for that, runtime_broker_offline at once, whatever was pending
// (a create, a stop, the first lines of logs), instead of a resend that
// would wait for a broker that may never come back. The message says the
// outcome is unknown and names no address.
func (s *Server) channelErr(ctx context.Context, sess *session, err error) error {
	if err == nil || !api.IsCode(err, api.CodeBrokerUnavailable) || !sess.endedOffline(ctx) {
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
func (s *Server) nextSession(ctx context.Context, old *session) *session {
	for {
		cur, changed := s.sessions.watch(old.brokerID)
		select {
		case <-old.conn.Done():
		default:
			if cur == old {
				select {
				case <-time.After(50 * time.Millisecond):
					return old
				case <-ctx.Done():
					return nil
				case <-s.ctx.Done():
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
		case <-s.ctx.Done():
			return nil
		}
	}
}

// liveSession returns the broker's session for a stream (logs, exec,
// attach) once it is ready, or the offline error.
func (s *Server) liveSession(ctx context.Context, brokerID string) (*session, error) {
	sess := s.sessions.get(brokerID)
	if sess == nil {
		return nil, api.Errorf(api.CodeBrokerOffline, "the agent's runtime broker is offline")
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DispatchTimeout)
	defer cancel()
	return sess, waitReady(ctx, sess)
}

// brokerOnline reports whether the broker has a live channel to this Hub.
func (s *Server) brokerOnline(id string) bool { return s.sessions.get(id) != nil }
