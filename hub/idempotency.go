package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// Idempotency-Key on POST /agents.
//
// A create that carries the header claims (caller, key) in the same
// transaction that inserts the agent (store.CreateAgentWith), so the
// record exists exactly when the agent does. Only a final answer is
// stored: the agent as created (201) or a refusal (4xx, but not 408 or
// 429). A retry with the
// same key and the same request within idempotencyTTL gets that answer
// and creates nothing; the same key with a different request is refused
// with 409 idempotency_key_reused. A retry that arrives while the first
// request is still running in this Hub waits for it.
//
// A create whose outcome is not known (the broker went away with it
// unanswered: 503) stores nothing final. Its retry resolves the real
// outcome: if the broker has reported the agent since, the answer is the
// agent as it is now; if not, the create is sent to the broker again under
// the same broker key, which the broker remembers across restarts, so it
// runs once and answers with what it did. Requests refused before anything
// was created (validation, quota, an offline broker) store nothing:
// retrying them is safe and may succeed.

const (
	idempotencyTTL = 24 * time.Hour
	// janitorEvery is how often expired keys and old dispatches are pruned.
	janitorEvery = 10 * time.Minute
)

// createKey is a create's Idempotency-Key, scoped to its caller, with the
// hash of the request it came with.
type createKey struct {
	caller, key, hash string
}

// createKeyOf reads the header; nil without one. The hash is of the
// request as decoded (before Hub defaults are filled in), so formatting
// and field order do not matter but every value does.
func createKeyOf(r *http.Request, c *Caller, req *api.CreateAgentRequest) (*createKey, error) {
	k := r.Header.Get(api.HeaderIdempotencyKey)
	if k == "" {
		return nil, nil
	}
	if err := api.CheckIdempotencyKey(k); err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &createKey{caller: authstore.KeyOwner(*c), key: k, hash: hex.EncodeToString(sum[:])}, nil
}

// record is k's record made at now; nil for no key.
func (k *createKey) record(now time.Time) *store.IdempotencyRecord {
	if k == nil {
		return nil
	}
	return &store.IdempotencyRecord{Caller: k.caller, Key: k.key, RequestHash: k.hash, CreatedAt: now, ExpiresAt: now.Add(idempotencyTTL)}
}

// replayCreate answers a create whose key was already used; ok is false
// when it was not (or has expired), and the create should proceed. A
// record without a final answer is resolved by resolve.
func (s *Server) replayCreate(ctx context.Context, k *createKey, resolve func(*store.IdempotencyRecord) (int, any, error)) (status int, body any, ok bool, err error) {
	rec, err := s.store.GetIdempotencyRecord(ctx, k.caller, k.key, time.Now())
	if isNotFound(err) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, true, err
	}
	if rec.RequestHash != k.hash {
		return 0, nil, true, api.Conflict(api.CodeIdempotencyKeyReused,
			"%s %q was already used for a different request in the last %s; send a new key with a new request",
			api.HeaderIdempotencyKey, k.key, idempotencyTTL)
	}
	if rec.Status != 0 {
		return rec.Status, json.RawMessage(rec.Response), true, nil
	}
	status, body, err = resolve(rec)
	return status, body, true, err
}

// resolveCreate answers a keyed create whose first request stored no
// final answer (its outcome was unknown, or its Hub died): with the agent
// as the broker has reported it since, or by sending the create to the
// broker again under the create's own broker key. A final answer is
// stored.
func (s *Server) resolveCreate(ctx context.Context, c *Caller, k *createKey, rec *store.IdempotencyRecord, p *store.Project, req api.CreateAgentRequest) (int, any, error) {
	status, body, outcome, err := s.resolveOutcome(ctx, c, rec, p, req)
	if outcome {
		s.recordCreate(ctx, k, status, body, err)
	}
	return status, body, err
}

// resolveOutcome is resolveCreate's answer; outcome says it is the
// create's (the agent as it is, or the broker's answer to the create),
// not a refusal to ask (the broker offline, the quota full now), which a
// later retry may get past.
func (s *Server) resolveOutcome(ctx context.Context, c *Caller, rec *store.IdempotencyRecord, p *store.Project, req api.CreateAgentRequest) (_ int, _ any, outcome bool, _ error) {
	a, err := s.store.GetAgent(ctx, rec.AgentID)
	if isNotFound(err) {
		return 0, nil, false, api.Conflict(api.CodeConflict, "the request first sent with this %s created agent %s, which has since been deleted",
			api.HeaderIdempotencyKey, rec.AgentID)
	}
	if err != nil {
		return 0, nil, false, err
	}
	if (!createUnresolved(a) && !startUnfinished(a, req)) || a.ProjectID != p.ID {
		return http.StatusCreated, s.agentView(ctx, a, nil), true, nil
	}
	if s.inflight.has(a.ID) {
		return 0, nil, false, api.Errorf(api.CodeBrokerUnavailable,
			"agent %q has a command on its way to its runtime broker; retry with the same %s", a.Slug, api.HeaderIdempotencyKey)
	}
	b, err := s.store.GetBroker(ctx, a.BrokerID)
	if isNotFound(err) { // deregistered with force
		return 0, nil, false, plan.Reach(plan.ReachInput{Agent: a, BrokerMissing: true})
	}
	if err != nil {
		return 0, nil, false, err
	}
	if a.Pin != nil {
		// Asking the broker again reaches it for an existing agent: its
		// placement is checked first (plan.Reach), as for any other.
		reach, err := s.withPinned(ctx, plan.ReachInput{Agent: a, Broker: b})
		if err == nil {
			err = plan.Reach(reach)
		}
		if err != nil {
			return 0, nil, false, err
		}
	}
	if !s.disp.Online(b.ID) {
		return 0, nil, false, api.Errorf(api.CodeBrokerOffline,
			"runtime broker %q is offline: the outcome of this create is known when it reconnects; retry with the same %s then",
			b.Name, api.HeaderIdempotencyKey).WithDetail("broker", b.Name)
	}
	secrets, err := s.recordedSecrets(ctx, c, p, a)
	if err != nil {
		return 0, nil, false, err
	}
	if a, err = s.reprovision(ctx, a, b, req.Start); err != nil {
		return 0, nil, false, err
	}
	spec := s.createSpec(a, p, secrets, req.Kubernetes, req.Start)
	a, _, err = s.runCreate(ctx, a, b, spec, "create:"+a.RunID)
	if err != nil {
		return 0, nil, finalAnswer(err), err
	}
	return http.StatusCreated, s.agentView(ctx, a, map[string]string{b.ID: b.Name}), true, nil
}

// startUnfinished reports whether a create that asked for a start left
// its agent created but never started: its broker died between the
// runtime's create and its start, and reported the container as created
// when it came back. Sent again under the same broker key, the create
// finishes (the broker starts the agent it has for that run) instead of
// answering 201 with an agent that will never run.
func startUnfinished(a *store.Agent, req api.CreateAgentRequest) bool {
	return req.Start && a.Phase == api.PhaseCreated && a.ContainerStatus == api.ContainerCreated
}

// finalAnswer reports whether an answer is one to store for the key: a
// success or a refusal, not a failure the next try may not meet (5xx), nor
// a "try again later" (408, 429: a busy broker or runtime), which the
// broker's own record of keyed commands does not keep either.
func finalAnswer(err error) bool {
	if err == nil {
		return true
	}
	st := api.AsError(err).Status
	return st < 500 && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests
}

// recordCreate stores the final answer of a keyed create: what serveAPI
// is about to write for (status, body, err). A 5xx is never stored: it
// says nothing about what happened, and the retry finds out.
func (s *Server) recordCreate(ctx context.Context, k *createKey, status int, body any, err error) {
	if !finalAnswer(err) {
		return
	}
	if err != nil {
		// What the caller was answered (httpapi.PublicError): a replay, read back
		// from JSON, no longer knows that a broker wrote the message.
		e := httpapi.PublicError(api.AsError(err))
		status, body = e.Status, api.ErrorBody{Error: e}
	}
	b, merr := json.Marshal(body)
	if merr == nil {
		merr = s.store.CompleteIdempotencyRecord(context.WithoutCancel(ctx), k.caller, k.key, status, b)
	}
	if merr != nil {
		// The agent exists; a retry will answer with it as it is then.
		s.log.Error("recording the answer of a create with an Idempotency-Key", "key", k.key, "caller", k.caller, "err", merr)
	}
}

// keyedCreates are the keys of the creates running in this Hub, so that a
// retry waits for the request it repeats instead of racing it.
type keyedCreates struct {
	mu      sync.Mutex
	running map[string]chan struct{}
}

// acquire waits until no other request with k runs in this Hub and marks
// k as running until release is called.
func (kc *keyedCreates) acquire(ctx context.Context, k *createKey) (release func(), err error) {
	id := k.caller + "\x00" + k.key
	for {
		kc.mu.Lock()
		if kc.running == nil {
			kc.running = map[string]chan struct{}{}
		}
		busy, ok := kc.running[id]
		if !ok {
			done := make(chan struct{})
			kc.running[id] = done
			kc.mu.Unlock()
			return func() {
				kc.mu.Lock()
				delete(kc.running, id)
				kc.mu.Unlock()
				close(done)
			}, nil
		}
		kc.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, api.Errorf(api.CodeBrokerUnavailable,
				"the request first sent with this %s is still running; try again", api.HeaderIdempotencyKey)
		}
	}
}

// errKeyInUse: a concurrent create with the same key won the claim.
func errKeyInUse(err error) bool { return errors.Is(err, store.ErrKeyInUse) }

// janitor prunes expired Idempotency-Key records and old finished
// dispatches until the Hub closes.
func (s *Server) janitor() {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(s.systemCtx(), time.Minute)
		if _, err := s.store.PruneIdempotencyRecords(ctx, time.Now()); err != nil && s.ctx.Err() == nil {
			s.log.Warn("pruning idempotency keys", "err", err)
		}
		if _, err := s.store.PruneDispatches(ctx, time.Now().Add(-finishedRetention)); err != nil && s.ctx.Err() == nil {
			s.log.Warn("pruning finished dispatches", "err", err)
		}
		if _, err := s.store.PruneNonces(ctx, time.Now()); err != nil && s.ctx.Err() == nil {
			s.log.Warn("pruning broker nonces", "err", err)
		}
		cancel()
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
	}
}
