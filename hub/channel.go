package hub

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/httpapi"
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
	conn, err := wire.Accept(w, r, wire.Options{HeartbeatInterval: s.opts.HeartbeatInterval, Grace: s.opts.Grace,
		OnRTT: func(d time.Duration) { s.metrics.rtt.Observe(d.Seconds()) }})
	if err != nil {
		s.log.Warn("control channel upgrade failed", "broker", c.ID, "err", err)
		return
	}
	s.metrics.channels.Inc()
	if _, again := s.metrics.seenBrokers.LoadOrStore(c.ID, true); again {
		s.metrics.reconnects.Inc()
	}
	sess := channel.NewSession(uuid.NewString(), c.ID, conn)
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
		return struct{}{}, s.applyAgentStatus(ctx, sess.BrokerID, st)
	})
	conn.Handle(wire.MethodJobUpdate, func(ctx context.Context, req *wire.Request) (any, error) {
		var u wire.JobUpdate
		if err := req.Decode(&u); err != nil {
			return nil, api.BadRequest("bad job.update body: %v", err)
		}
		// Recorded even if the channel drops meanwhile, as agent.status.
		ctx, cancel := context.WithTimeout(authstore.AsSystem(context.WithoutCancel(ctx)), 10*time.Second)
		defer cancel()
		return struct{}{}, s.jobs.ApplyUpdate(ctx, sess.BrokerID, u)
	})
	conn.Handle(wire.MethodInventorySet, func(ctx context.Context, req *wire.Request) (any, error) {
		var inv wire.Inventory
		if err := req.Decode(&inv); err != nil {
			return nil, api.BadRequest("bad inventory body: %v", err)
		}
		return struct{}{}, s.reconcileInventory(authstore.AsSystem(ctx), sess.BrokerID, inv.Agents)
	})
	s.log.Info("broker channel opened", "broker", c.Name, "broker_id", c.ID, "session", sess.ID)
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
func (s *Server) endSession(sess *channel.Session, name string, reason error) {
	offline := s.sessions.Remove(sess)
	defer sess.End(offline)
	if offline {
		// Use a fresh context: the request's may be done, and the Hub's is
		// when it closes (the broker is marked offline then too).
		ctx, cancel := context.WithTimeout(authstore.AsSystem(context.Background()), 5*time.Second)
		defer cancel()
		if err := s.store.SetBrokerStatus(ctx, sess.BrokerID, api.BrokerOffline, sess.Conn.LastSeen().UTC()); err != nil {
			s.log.Error("marking broker offline", "broker_id", sess.BrokerID, "err", err)
		}
		s.log.Info("broker offline", "broker", name, "broker_id", sess.BrokerID, "reason", reason)
	}
}

// onHello records what the broker announced, reconciles the broker's
// inventory, makes this session current (closing any older one) and starts
// delivering the dispatches queued while the broker was offline.
func (s *Server) onHello(ctx context.Context, sess *channel.Session, req *wire.Request) (any, error) {
	var h wire.Hello
	if err := req.Decode(&h); err != nil {
		return nil, api.BadRequest("bad hello: %v", err)
	}
	if err := checkHello(&h, sess.BrokerID); err != nil {
		return nil, err
	}
	on, err := s.experimentOn(ctx, api.ExperimentFlatRuntimeBrokers)
	if err != nil {
		return nil, err
	}
	// One read-modify-write of the record, so that an admin's change of
	// the broker's settings in between is neither lost nor undone.
	var was *api.RuntimeTarget
	b, err := s.store.UpdateBrokerWith(ctx, sess.BrokerID, func(b *store.Broker) error {
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
			s.log.Warn("broker hello refused", "broker_id", sess.BrokerID, "err", err)
		}
		return nil, err
	}
	s.logTargetChange(b, was)
	// Reconcile before the session becomes current: until then nothing can
	// be dispatched to this broker, so the inventory in the hello cannot be
	// overtaken by a create on the new channel.
	if err := s.reconcileInventory(ctx, sess.BrokerID, h.Inventory); err != nil {
		return nil, err
	}
	// The session becomes current now, but not ready: every other
	// command waits (see dispatch) until drainQueue has delivered what was
	// queued, so nothing overtakes a queued stop. The drain runs after
	// the hello is answered rather than inside it: delivering many stops
	// can take longer than the broker waits for its hello, and the broker
	// serves requests as soon as its channel is up.
	if old := s.sessions.Put(sess); old != nil && old != sess {
		_ = old.Conn.Close("replaced by a new session")
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.drainQueue(sess)
	}()
	s.log.Info("broker online", "broker", b.Name, "broker_id", b.ID, "session", sess.ID, "inventory", len(h.Inventory))
	return wire.HelloReply{
		ProtocolVersion:     wire.ProtocolVersion,
		HubVersion:          s.opts.Version,
		SessionID:           sess.ID,
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
	// An older broker reports no storage: nil, which a move refuses.
	b.WorkspaceStorage = h.WorkspaceStorage
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
