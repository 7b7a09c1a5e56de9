package hub

import (
	"context"
	"net/http"
	"time"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/jobs"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// The room of delegated Jobs is hub/jobs; this file is what it takes
// from the Hub (jobs.Hub), over the Server's own parts: the control
// channel, the agents' loads, the offline dispatch queue, the broker's
// signed authentication, the sealing box, the Hub's context and
// background work. The Hub calls the room back from the channel
// (job.update), an agent's delete, a broker's deregistration and the
// queue's delivery.

func (s *Server) newJobs() *jobs.Service {
	return jobs.New(jobs.Config{Store: s.store, Log: s.log, Hub: jobsHub{s},
		Jobs: s.metrics.jobs, Queued: s.metrics.queued,
		DispatchTimeout: s.opts.DispatchTimeout, MaxQueuedAttempts: maxQueuedAttempts})
}

// jobsHub is the Server as hub/jobs sees it.
type jobsHub struct{ s *Server }

func (h jobsHub) Dispatch(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return h.s.disp.Dispatch(ctx, brokerID, method, req, resp, key)
}

func (h jobsHub) DispatchSettled(ctx context.Context, brokerID, method string, req, resp any, key string) error {
	return h.s.disp.DispatchSettled(ctx, brokerID, method, req, resp, key)
}

func (h jobsHub) BrokerOnline(brokerID string) bool { return h.s.disp.Online(brokerID) }

func (h jobsHub) LoadAgent(ctx context.Context, c *authz.Caller, r *http.Request, act authz.Action) (*store.Agent, error) {
	return h.s.loadAgent(ctx, c, r, act)
}

func (h jobsHub) LoadProject(ctx context.Context, c *authz.Caller, ref string, act authz.Action) (*store.Project, error) {
	return h.s.loadProject(ctx, c, ref, act)
}

func (h jobsHub) LoadReach(ctx context.Context, a *store.Agent) (plan.ReachInput, error) {
	return h.s.loadReach(ctx, a)
}

func (h jobsHub) LockQueue(brokerID string) (unlock func()) {
	mu := h.s.queueLock.get(brokerID)
	mu.Lock()
	return mu.Unlock
}

func (h jobsHub) OnReadySession(brokerID string, wait time.Duration, f func(ctx context.Context, sess jobs.Session)) {
	s := h.s
	sess := s.sessions.Get(brokerID)
	if sess == nil {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-sess.Conn.Done():
			return
		case <-s.ctx.Done():
			return
		}
		dl := s.drainLock.get(brokerID)
		dl.Lock()
		defer dl.Unlock()
		if s.sessions.Get(brokerID) != sess || sess.Done() {
			return
		}
		select {
		case <-sess.Ready():
		default:
			return // a drain is running: it delivers the queue
		}
		f(s.systemCtx(), jobsSession{s: s, sess: sess})
	}()
}

func (h jobsHub) FinishQueued(ctx context.Context, d *store.Dispatch, status, result string) bool {
	return h.s.finishQueued(ctx, d, status, result, queuedDone) == queuedDone
}

func (h jobsHub) Authenticate(w http.ResponseWriter, r *http.Request) (*authz.Caller, bool) {
	return h.s.id.AuthenticateLimited(w, r)
}

func (h jobsHub) Secrets() (jobs.SecretBox, error) {
	if h.s.secrets == nil {
		return nil, errNoSecretsKey()
	}
	return h.s.secrets, nil
}

func (h jobsHub) SystemContext() context.Context { return h.s.systemCtx() }

func (h jobsHub) Go(f func()) {
	h.s.bg.Add(1)
	go func() {
		defer h.s.bg.Done()
		f()
	}()
}

// jobsSession is a broker's session a queued job.cancel is delivered on.
type jobsSession struct {
	s    *Server
	sess *channel.Session
}

func (j jobsSession) SendQueued(ctx context.Context, d *store.Dispatch) error {
	return j.s.sendQueued(ctx, j.sess, d, nil)
}

func (j jobsSession) Ended() bool { return j.sess.Done() }

// deliverQueuedJobCancel hands a queued job.cancel to the Jobs room
// (jobs.Service.DeliverQueuedCancel) and reads its outcome as the
// drain's.
func (s *Server) deliverQueuedJobCancel(ctx context.Context, sess *channel.Session, d *store.Dispatch) queuedOutcome {
	switch s.jobs.DeliverQueuedCancel(ctx, jobsSession{s: s, sess: sess}, d) {
	case jobs.QueuedChannelGone:
		return queuedChannelGone
	case jobs.QueuedRetry:
		return queuedRetry
	}
	return queuedDone
}
