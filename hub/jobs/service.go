package jobs

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// Hub is what Jobs take from the Hub around them, named by what they do
// with it.
type Hub interface {
	Brokers
	Agents
	Queue
	// Authenticate authenticates r's credentials under the Hub's limit of
	// failed authentications per address; on false the answer is
	// written. The broker secret's value route, public in the route
	// table, checks its caller with it.
	Authenticate(w http.ResponseWriter, r *http.Request) (*authz.Caller, bool)
	// Secrets is the Hub's sealing box, or the error a Hub started
	// without a secrets key answers.
	Secrets() (SecretBox, error)
	// SystemContext is the context of the Hub's own work (hub/authstore's
	// system caller), done when the Hub closes.
	SystemContext() context.Context
	// Go runs f in the background as the Hub's own work, which closing
	// the Hub waits for.
	Go(f func())
}

// Brokers is the control channel to runtime brokers.
type Brokers interface {
	// Dispatch sends a command to broker brokerID and waits for its
	// answer; a keyed command whose answer was lost with the channel is
	// sent again, same key, on the broker's next session while it stays
	// online. An offline broker is runtime_broker_offline at once.
	Dispatch(ctx context.Context, brokerID, method string, req, resp any, key string) error
	// DispatchSettled is Dispatch that sends again through the broker's
	// going offline, until ctx ends: for job.run, whose outcome the Hub
	// must learn before it answers (the caller has no key to ask again).
	DispatchSettled(ctx context.Context, brokerID, method string, req, resp any, key string) error
	// BrokerOnline reports whether the broker has a live channel to this
	// Hub.
	BrokerOnline(brokerID string) bool
}

// Agents loads agents and projects for a caller, with their
// authorization: the Hub's agents room decides who sees what.
type Agents interface {
	// LoadAgent resolves r's {agent} (an ID, or a slug in ?project=) and
	// checks that c may do act on it; an agent c cannot see is answered
	// like an unknown one.
	LoadAgent(ctx context.Context, c *authz.Caller, r *http.Request, act authz.Action) (*store.Agent, error)
	// LoadProject resolves a project by ID or name and checks that c may
	// do act on it; one c cannot see is answered like an unknown one.
	LoadProject(ctx context.Context, c *authz.Caller, ref string, act authz.Action) (*store.Project, error)
	// LoadReach reads what plan.Reach decides on for agent a.
	LoadReach(ctx context.Context, a *store.Agent) (plan.ReachInput, error)
}

// Queue is the Hub's offline dispatch queue, as a Job's cancel uses it
// (see cancel.go): the queue delivers a broker's dispatches in order when
// it says hello, and hands a queued job.cancel to DeliverQueuedCancel.
type Queue interface {
	// LockQueue takes broker brokerID's queue lock, under which the Hub
	// declares the broker's queue drained: "offline" decided under it
	// means a dispatch queued then is delivered at the next hello.
	LockQueue(brokerID string) (unlock func())
	// OnReadySession calls f, in the background, after wait, with the
	// session broker brokerID has now, if that session is then still its
	// current one, up and ready (its queue drained: a drain running
	// delivers the queue itself), under the broker's drain lock so that f
	// never overlaps a drain. Nothing happens when the broker has no
	// session now, or it ends or the Hub closes first.
	OnReadySession(brokerID string, wait time.Duration, f func(ctx context.Context, sess Session))
	// FinishQueued records queued dispatch d's final status and result;
	// false when that failed, and d stays pending, to be sent again
	// (same key) after a pause.
	FinishQueued(ctx context.Context, d *store.Dispatch, status, result string) bool
}

// Session is the control channel a queued dispatch is delivered on.
type Session interface {
	// SendQueued sends queued dispatch d once, with its row's key, within
	// the dispatch timeout.
	SendQueued(ctx context.Context, d *store.Dispatch) error
	// Ended reports whether the channel has ended.
	Ended() bool
}

// SecretBox seals values at rest under the Hub's secrets key, each bound
// to its scope and name: a value moved to another row does not open.
type SecretBox interface {
	Seal(scope, name string, value []byte) []byte
	Open(scope, name string, sealed []byte) ([]byte, error)
}

// Outcome is what delivering a queued job.cancel left: finished
// (delivered, or given up on with the Job saying why), or still pending.
type Outcome int

const (
	QueuedDone        Outcome = iota // finished
	QueuedChannelGone                // still pending; the session ended
	QueuedRetry                      // still pending; a database error
)

// Config is what hub.New builds the room with.
type Config struct {
	// Store is the Hub's store: hub/authstore's wrapper, which decides
	// every call for the caller its context carries.
	Store store.Store
	Log   *slog.Logger
	Hub   Hub
	// Jobs (scion_jobs_total{cluster,outcome}) and Queued
	// (scion_dispatches_queued_total, shared with the Hub's queued
	// stops) are the Hub's counters, on its registry.
	Jobs   *prometheus.CounterVec
	Queued prometheus.Counter
	// DispatchTimeout bounds one command to a broker.
	DispatchTimeout time.Duration
	// MaxQueuedAttempts bounds the deliveries of one queued dispatch
	// that end without an answer, as for the Hub's other queued
	// dispatches.
	MaxQueuedAttempts int
}

// Service is the room: its routes, and what the Hub calls it for.
type Service struct {
	store             store.Store
	log               *slog.Logger
	hub               Hub
	metrics           *metrics
	dispatchTimeout   time.Duration
	maxQueuedAttempts int

	// runWait overrides jobRunTimeout (tests: SetRunTimeout).
	runWait atomic.Int64
	// cancelWait overrides jobCancelTimeout (tests: SetCancelTimeout).
	cancelWait atomic.Int64
	// sweepWait overrides pendingJobSweepEvery and sweepWake starts a
	// sweep now (tests: SetPendingSweep).
	sweepWait atomic.Int64
	sweepWake chan struct{}
}

// New builds the room over cfg.
func New(cfg Config) *Service {
	return &Service{
		store:             cfg.Store,
		log:               cfg.Log,
		hub:               cfg.Hub,
		metrics:           &metrics{jobs: cfg.Jobs, queued: cfg.Queued},
		dispatchTimeout:   cfg.DispatchTimeout,
		maxQueuedAttempts: cfg.MaxQueuedAttempts,
		sweepWake:         make(chan struct{}, 1),
	}
}

// Routes are the room's routes, for the Hub's route table.
func (s *Service) Routes() []httpapi.Route {
	a, stream, pub := httpapi.Authed, httpapi.Stream, httpapi.Public
	return []httpapi.Route{
		a("POST /api/v1/agents/{agent}/jobs", s.handleRunJob),
		a("GET /api/v1/agents/{agent}/jobs", s.handleListAgentJobs),

		a("GET /api/v1/jobs", s.handleListJobs),
		a("GET /api/v1/jobs/{job}", s.handleGetJob),
		stream("GET /api/v1/jobs/{job}/logs", s.handleJobLogs),
		stream("GET /api/v1/jobs/{job}/trace", s.handleJobTrace),
		a("POST /api/v1/jobs/{job}/cancel", s.handleCancelJob),

		a("PUT /api/v1/runtime-brokers/{broker}/secrets/{name}", s.handlePutBrokerSecret),
		a("GET /api/v1/runtime-brokers/{broker}/secrets", s.handleListBrokerSecrets),
		a("DELETE /api/v1/runtime-brokers/{broker}/secrets/{name}", s.handleDeleteBrokerSecret),
		pub("GET /api/v1/runtime-brokers/{broker}/secrets/{name}/value", s.handleBrokerSecretValue),
	}
}

// SetRunTimeout shortens how long a job.run waits for the broker's
// answer (tests).
func (s *Service) SetRunTimeout(d time.Duration) { s.runWait.Store(int64(d)) }

// SetCancelTimeout shortens how long a job.cancel waits for the broker's
// answer before it is queued (tests).
func (s *Service) SetCancelTimeout(d time.Duration) { s.cancelWait.Store(int64(d)) }

// SetPendingSweep makes the lost-run sweep run every d, starting now
// (tests).
func (s *Service) SetPendingSweep(d time.Duration) {
	s.sweepWait.Store(int64(d))
	select {
	case s.sweepWake <- struct{}{}:
	default:
	}
}

// systemCtx is the context of the Hub's own work (see Hub.SystemContext).
func (s *Service) systemCtx() context.Context { return s.hub.SystemContext() }

// isNotFound is the store's not found: a record deleted meanwhile is
// something to decide on, not to answer.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
