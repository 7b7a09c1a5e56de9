// Deregistration of brokers, and what their agents answer once a broker
// is gone (runtime_broker_missing).

package hub

import (
	"context"
	"net/http"
	"strconv"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// handleDeregisterBroker removes a broker. One that still has agents is
// refused with the list (409 runtime_broker_has_agents) unless forced
// (?force=true): the Hub cannot tell whether their workloads still run,
// so it never drops them silently. A forced deregistration leaves the
// agents' records and reservations in place; what needs the broker then
// answers 409 runtime_broker_missing, and a forced agent delete removes
// the record. The broker stops being any project's default and the Hub's
// default_runtime_broker.
func (s *Server) handleDeregisterBroker(r *http.Request, c *Caller) (int, any, error) {
	ctx := r.Context()
	b, err := s.loadBroker(ctx, c, r.PathValue("broker"), authz.BrokerDeregister)
	if err != nil {
		return 0, nil, err
	}
	force, err := forceParam(r)
	if err != nil {
		return 0, nil, err
	}
	stranded, total, err := s.brokerAgents(ctx, b.ID, 1000)
	if err != nil {
		return 0, nil, err
	}
	if !force && total > 0 {
		return 0, nil, s.brokerHasAgents(ctx, c, b, stranded, total)
	}
	if err := s.store.DeleteBroker(ctx, b.ID, force); err != nil {
		if isConflict(err) { // an agent was placed on it meanwhile
			if stranded, total, err = s.brokerAgents(ctx, b.ID, 1000); err == nil {
				err = s.brokerHasAgents(ctx, c, b, stranded, max(total, 1))
			}
		}
		return 0, nil, err
	}
	if sess := s.sessions.Get(b.ID); sess != nil {
		_ = sess.Conn.Close("deregistered")
	}
	// What the deregistration leaves to tidy (the Hub's default, the
	// Jobs waiting for this broker's cancel) is the Hub's own work, not
	// cancelled with the request.
	s.forgetHubDefault(s.systemCtx(), b)
	s.jobs.EndCancelling(s.systemCtx(), b)
	if total > 0 {
		ids := make([]string, 0, len(stranded))
		for _, a := range stranded {
			ids = append(ids, a.ID)
		}
		s.log.Warn("runtime broker deregistered with force: its agents are left without a broker, and their workloads may still run on that machine",
			"broker", b.Name, "broker_id", b.ID, "by", c.Principal(), "agents", total, "agent_ids", ids)
	} else {
		s.log.Info("runtime broker deregistered", "broker", b.Name, "broker_id", b.ID, "by", c.Principal())
	}
	return http.StatusNoContent, nil, nil
}

// forceParam reads ?force= (absent: false).
func forceParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("force")
	if v == "" {
		return false, nil
	}
	f, err := strconv.ParseBool(v)
	if err != nil {
		return false, api.BadRequest("force must be true or false")
	}
	return f, nil
}

// brokerAgents returns up to limit of the agents assigned to a broker and
// how many there are, counting those that hold a slot on it while
// assigned elsewhere.
func (s *Server) brokerAgents(ctx context.Context, brokerID string, limit int) ([]*store.Agent, int, error) {
	agents, _, total, err := s.store.ListAgents(ctx, store.AgentFilter{BrokerID: brokerID}, store.Page{Limit: limit})
	if err != nil {
		return nil, 0, err
	}
	if total == 0 {
		if total, err = s.store.CountReservations(ctx, brokerID); err != nil {
			return nil, 0, err
		}
	}
	return agents, total, nil
}

// brokerHasAgents is the refusal of a deregistration without force. It
// names the agents the caller may read (project/agent, at most 50) and
// counts all of them: a broker's owner need not see every project its
// broker serves.
func (s *Server) brokerHasAgents(ctx context.Context, c *Caller, b *store.Broker, agents []*store.Agent, total int) error {
	names := []string{}
	projects := map[string]*store.Project{}
	for _, a := range agents {
		if len(names) == 50 {
			break
		}
		p, ok := projects[a.ProjectID]
		if !ok {
			var err error
			if p, err = s.store.GetProject(ctx, a.ProjectID); err != nil && !isNotFound(err) {
				return err
			}
			projects[a.ProjectID] = p
		}
		if p != nil && authz.Can(*c, authz.AgentRead, authz.Resource{Project: plan.ProjectRes(p), Agent: plan.AgentRes(a)}) == nil {
			names = append(names, p.Name+"/"+a.Slug)
		}
	}
	return api.Conflict(api.CodeBrokerHasAgents,
		"runtime broker %q still has %d agent(s); delete them first, or deregister with --force to leave them without a broker (their workloads may keep running on that machine)",
		b.Name, total).WithDetail("agents", names).WithDetail("total", total)
}

// forgetHubDefault clears the Hub's default_runtime_broker when it names
// a deregistered broker, so the settings stop showing it. It is a write
// of its own after the store's transaction (projects' defaults are
// cleared in that one); a default it leaves behind (a kill -9 in
// between) does no harm: it holds the deleted broker's ID, which the
// cascade and GET /admin/settings read as no default (liveBrokerRef).
func (s *Server) forgetHubDefault(ctx context.Context, b *store.Broker) {
	cleared := false
	err := s.settings.Update(ctx, func(v *api.HubSettings) (bool, error) {
		ref := v.AgentDefaults.DefaultRuntimeBroker
		if ref == "" || (ref != b.ID && ref != b.Name) {
			return false, nil
		}
		v.AgentDefaults.DefaultRuntimeBroker = ""
		cleared = true
		return true, nil
	})
	if err == nil && !cleared {
		return
	}
	if err != nil {
		s.log.Error("could not clear the Hub's default_runtime_broker after a deregistration", "broker", b.Name, "broker_id", b.ID, "err", err)
		return
	}
	s.log.Info("cleared the Hub's default_runtime_broker: its broker was deregistered", "broker", b.Name, "broker_id", b.ID)
}

// orBrokerMissing turns the offline answer for a's broker into
// plan.Reach's (plan.BrokerMissing) when that broker is no longer registered.
// It reads the store only when the broker has no session. (The streams
// that use it, logs, exec and attach, are where the flat brokers'
// placement checks call plan.Reach before reaching the broker.)
func (s *Server) orBrokerMissing(ctx context.Context, a *store.Agent, err error) error {
	if a.BrokerID == "" || !api.IsCode(err, api.CodeBrokerOffline) {
		return err
	}
	if _, gerr := s.store.GetBroker(ctx, a.BrokerID); isNotFound(gerr) {
		return plan.Reach(plan.ReachInput{Agent: a, BrokerMissing: true})
	}
	return err
}
