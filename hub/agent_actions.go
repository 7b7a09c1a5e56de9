package hub

import (
	"context"
	"errors"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// action describes one lifecycle verb: the broker method it dispatches and
// whether the agent runs afterwards (and so must hold a capacity slot).
type action struct {
	method  string
	running bool
}

var actions = map[string]action{
	"start":   {wire.MethodAgentStart, true},
	"restart": {wire.MethodAgentRestart, true},
	"resume":  {wire.MethodAgentResume, true},
	"stop":    {wire.MethodAgentStop, false},
	"suspend": {wire.MethodAgentSuspend, false},
}

func (s *Server) handleAgentAction(w http.ResponseWriter, r *http.Request, c *Caller) {
	ctx := r.Context()
	act, ok := actions[r.PathValue("action")]
	if !ok {
		s.writeError(w, r, api.NotFound(api.CodeNotFound, "unknown agent action %q: use start, stop, restart, suspend or resume", r.PathValue("action")))
		return
	}
	a, err := s.loadAgent(ctx, c, r)
	if err == nil {
		err = requireWriter(c)
	}
	if err == nil && a.BrokerID == "" {
		err = api.Conflict(api.CodeConflict, "agent %q has no runtime broker", a.Slug)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.loadBroker(ctx, a.BrokerID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.brokerOnline(b.ID) {
		s.writeError(w, r, api.Errorf(http.StatusServiceUnavailable, api.CodeBrokerOffline,
			"runtime broker %q is offline; try again when it reconnects", b.Name).WithDetail("broker", b.Name))
		return
	}
	if act.running {
		// Checked again at start, resume and restart. A refused restart
		// leaves the running container alone: nothing is dispatched.
		limit, err := s.brokerLimit(ctx, b)
		if err == nil {
			err = s.store.Reserve(ctx, b.ID, a.ID, limit)
			if errors.Is(err, store.ErrQuota) {
				err = quotaError(b, limit)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	key := r.Header.Get(api.HeaderIdempotencyKey)
	if key == "" {
		key = mustV7()
	} else {
		key = c.ID + ":" + key
	}
	if act.method == wire.MethodAgentStop && a.Phase == api.PhaseRunning {
		// Recorded first, so the exit the stop causes is not taken for a
		// crash when the broker reports it.
		if _, err := s.mutateAgent(ctx, a.ID, func(a *store.Agent) error {
			if a.Phase == api.PhaseRunning {
				a.Phase = api.PhaseStopping
			}
			return nil
		}); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	var st wire.AgentStatus
	s.inflight.add(a.ID)
	defer s.inflight.done(a.ID)
	derr := s.dispatch(ctx, b.ID, act.method, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, &st, r.PathValue("action")+":"+key)
	if derr != nil && !act.running {
		// A failed stop or suspend leaves the agent as it was.
		if act.method == wire.MethodAgentStop {
			_, _ = s.mutateAgent(context.WithoutCancel(ctx), a.ID, func(a *store.Agent) error {
				if a.Phase == api.PhaseStopping {
					a.Phase = api.PhaseRunning
				}
				return nil
			})
		}
		s.writeError(w, r, derr)
		return
	}
	a, err = s.afterDispatch(context.WithoutCancel(ctx), a.ID, st, derr, act.running)
	if err == nil {
		err = derr
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.agentView(ctx, a, map[string]string{b.ID: b.Name}))
}

func (s *Server) handleDeleteAgent(w http.ResponseWriter, r *http.Request, c *Caller) {
	ctx := r.Context()
	a, err := s.loadAgent(ctx, c, r)
	if err == nil {
		err = requireWriter(c)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a.BrokerID != "" {
		if !s.brokerOnline(a.BrokerID) {
			// Removing the record without reaching the broker could leave a
			// workload running with its capacity released.
			s.writeError(w, r, api.Errorf(http.StatusServiceUnavailable, api.CodeBrokerOffline,
				"the agent's runtime broker is offline; delete it when the broker reconnects"))
			return
		}
		err := s.dispatch(ctx, a.BrokerID, wire.MethodAgentDelete, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, nil, "delete:"+a.ID)
		if err != nil && !api.IsCode(err, api.CodeAgentNotFound) {
			s.writeError(w, r, err)
			return
		}
	}
	if err := s.store.DeleteAgent(context.WithoutCancel(ctx), a.ID); err != nil && !isNotFound(err) {
		s.writeError(w, r, err)
		return
	}
	s.observed.forget(a.ID)
	w.WriteHeader(http.StatusNoContent)
}
