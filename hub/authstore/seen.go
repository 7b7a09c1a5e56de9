package authstore

import (
	"sync"
	"time"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// seen is what one request has read or written through the wrapper so
// far: the identity of the agents, Jobs and brokers a later decision of
// the same request needs, and the brokers its records name. A write
// that takes an ID (DeleteAgent, Release, a Job's update) is decided on
// the identity its request read just before, so it costs no read of its
// own; an identity not seen is read from the store. It lives as long as
// the request (goroutines of one request share it: a forced project
// delete removes agents in parallel).
type seen struct {
	mu      sync.Mutex
	agents  map[string]agentSeen
	jobs    map[string]jobSeen
	brokers map[string]brokerSeen
}

// agentSeen is an agent as decisions see it: its authorization identity,
// and for an agent that is the caller itself what the secrets it hands
// on are judged by.
type agentSeen struct {
	res         authz.AgentRes
	secretNames []string
	createdAt   time.Time
}

// jobSeen is a Job's ledger row as decisions see it.
type jobSeen struct {
	projectID, agentID, createdBy string
}

// brokerSeen is a broker as decisions see it. named: a record the request
// was allowed to read names it (an agent's or a Job's broker), so the
// request may read the broker's record too (the agent's view shows its
// broker, and its actions reach it). known: res was read from its record.
type brokerSeen struct {
	res          authz.BrokerRes
	named, known bool
}

// newSeen is empty; its maps are made on first use (most requests need
// one or two of them).
func newSeen() *seen { return &seen{} }

func agentRes(a *store.Agent) authz.AgentRes {
	return authz.AgentRes{ID: a.ID, ProjectID: a.ProjectID, Role: a.Role, CreatedBy: a.CreatedBy,
		Delegator: a.Delegator, ParentAgentID: a.ParentAgentID, Passthrough: a.Passthrough}
}

func brokerRes(b *store.Broker) authz.BrokerRes {
	return authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide}
}

// sawAgent records agent a as read or written; shown: the caller was
// given the record, so the brokers it names are readable too.
func (s *seen) sawAgent(a *store.Agent, shown bool) {
	if s == nil || a == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agents == nil {
		s.agents = map[string]agentSeen{}
	}
	s.agents[a.ID] = agentSeen{res: agentRes(a), secretNames: a.SecretNames, createdAt: a.CreatedAt}
	if shown {
		s.nameLocked(a.BrokerID)
		if a.Pin != nil {
			s.nameLocked(a.Pin.BrokerID)
		}
	}
}

func (s *seen) forgetAgent(id string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.agents, id)
}

func (s *seen) agent(id string) (agentSeen, bool) {
	if s == nil {
		return agentSeen{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[id]
	return a, ok
}

func (s *seen) sawJob(j *store.Job, shown bool) {
	if s == nil || j == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs == nil {
		s.jobs = map[string]jobSeen{}
	}
	s.jobs[j.ID] = jobSeen{projectID: j.ProjectID, agentID: j.AgentID, createdBy: j.CreatedBy}
	if shown {
		s.nameLocked(j.BrokerID)
	}
}

func (s *seen) job(id string) (jobSeen, bool) {
	if s == nil {
		return jobSeen{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	return j, ok
}

func (s *seen) sawBroker(b *store.Broker) {
	if s == nil || b == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.brokers == nil {
		s.brokers = map[string]brokerSeen{}
	}
	x := s.brokers[b.ID]
	x.res, x.known = brokerRes(b), true
	s.brokers[b.ID] = x
}

func (s *seen) nameLocked(id string) {
	if id == "" {
		return
	}
	if s.brokers == nil {
		s.brokers = map[string]brokerSeen{}
	}
	x := s.brokers[id]
	x.named = true
	s.brokers[id] = x
}

func (s *seen) broker(id string) (brokerSeen, bool) {
	if s == nil {
		return brokerSeen{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.brokers[id]
	return b, ok
}
