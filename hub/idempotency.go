package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// Idempotency-Key on POST /agents.
//
// A create that carries the header claims (caller, key) in the same
// transaction that inserts the agent (store.CreateAgentKeyed), so the
// record exists exactly when the agent does; the answer (status and body,
// an error included) is stored right after it is computed. A retry with
// the same key and the same request within idempotencyTTL gets that answer
// and creates nothing; the same key with a different request is refused
// with 409 idempotency_key_reused. A retry that arrives while the first
// request is still running waits for its answer. If the Hub that ran the
// first request died before storing the answer, the retry answers with
// the agent as it is now (201) and stores that. Requests refused before
// anything was created (validation, quota, an offline broker) store
// nothing: retrying them is safe and may succeed.

const (
	idempotencyTTL = 24 * time.Hour
	// maxIdempotencyKey bounds the header (clients use UUIDs).
	maxIdempotencyKey = 255
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
	if len(k) > maxIdempotencyKey {
		return nil, api.BadRequest("%s is longer than %d bytes", api.HeaderIdempotencyKey, maxIdempotencyKey)
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &createKey{caller: string(c.Kind) + ":" + c.ID, key: k, hash: hex.EncodeToString(sum[:])}, nil
}

func (k *createKey) record(now time.Time) *store.IdempotencyRecord {
	return &store.IdempotencyRecord{Caller: k.caller, Key: k.key, RequestHash: k.hash, CreatedAt: now, ExpiresAt: now.Add(idempotencyTTL)}
}

// replayCreate answers a create whose key was already used; ok is false
// when it was not (or has expired), and the create should proceed.
func (s *Server) replayCreate(ctx context.Context, k *createKey) (status int, body any, ok bool, err error) {
	for {
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
		// The first request is still running, or its Hub died before it
		// answered: a running one is done within its dispatch deadline.
		if time.Since(rec.CreatedAt) > s.opts.DispatchTimeout+5*time.Second {
			return s.answerFromAgent(ctx, k, rec)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return 0, nil, true, api.Errorf(http.StatusServiceUnavailable, api.CodeBrokerUnavailable,
				"the request first sent with this %s is still running; try again", api.HeaderIdempotencyKey)
		}
	}
}

// answerFromAgent answers for a create whose answer was never stored,
// with the agent it created as it is now, and stores that answer.
func (s *Server) answerFromAgent(ctx context.Context, k *createKey, rec *store.IdempotencyRecord) (int, any, bool, error) {
	a, err := s.store.GetAgent(ctx, rec.AgentID)
	if isNotFound(err) {
		return 0, nil, true, api.Conflict(api.CodeConflict, "the request first sent with this %s created agent %s, which has since been deleted",
			api.HeaderIdempotencyKey, rec.AgentID)
	}
	if err != nil {
		return 0, nil, true, err
	}
	view := s.agentView(ctx, a, nil)
	s.recordCreate(ctx, k, http.StatusCreated, view, nil)
	return http.StatusCreated, view, true, nil
}

// recordCreate stores the answer of a keyed create: what serveAPI is about
// to write for (status, body, err).
func (s *Server) recordCreate(ctx context.Context, k *createKey, status int, body any, err error) {
	if err != nil {
		e := api.AsError(err)
		if e.Status >= 500 && e.Code == api.CodeInternal {
			e = api.Internal("internal error; see the Hub log") // as writeError answers
		}
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

// errKeyInUse: a concurrent create with the same key won the claim.
func errKeyInUse(err error) bool { return errors.Is(err, store.ErrKeyInUse) }

// janitor prunes expired Idempotency-Key records and old finished
// dispatches until the Hub closes.
func (s *Server) janitor() {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		if _, err := s.store.PruneIdempotencyRecords(ctx, time.Now()); err != nil && s.ctx.Err() == nil {
			s.log.Warn("pruning idempotency keys", "err", err)
		}
		if _, err := s.store.PruneDispatches(ctx, time.Now().Add(-finishedRetention)); err != nil && s.ctx.Err() == nil {
			s.log.Warn("pruning finished dispatches", "err", err)
		}
		cancel()
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
	}
}
