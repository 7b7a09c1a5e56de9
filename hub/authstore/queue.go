package authstore

import (
	"context"
	"time"

	"github.com/scion-go/scion/store"
)

// EnqueueDispatch lets a request queue a stop of an agent it may stop
// (decided on the agent as its request read it) or a Job's cancel it may
// make; anything else is the Hub's own.
func (s *Store) EnqueueDispatch(ctx context.Context, d *store.Dispatch, agent *store.Agent) (bool, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return false, err
	}
	if !a.system {
		subj := Subject{}
		switch d.Method {
		case QueuedStop:
			subj, err = s.agentSubject(ctx, a, d.AgentID)
		case QueuedJobCancel:
			subj, err = s.jobSubject(ctx, a, d.AgentID)
		}
		if err != nil {
			return false, err
		}
		subj.Kind = d.Method
		if err := verdict(Decide("EnqueueDispatch", a.caller, subj)); err != nil {
			return false, err
		}
		// The agent record written with it is a write of that agent.
		if agent != nil && (d.Method != QueuedStop || agent.ID != d.AgentID) {
			if _, err := s.decideAgent(ctx, "UpdateAgent", agent.ID); err != nil {
				return false, err
			}
		}
	}
	created, err := s.inner.EnqueueDispatch(ctx, d, agent)
	if err == nil && created && agent != nil {
		a.seen.sawAgent(agent, false)
	}
	return created, err
}

// The delivery of queued dispatches is the Hub's: a caller gets none.
func (s *Store) PendingDispatches(ctx context.Context, brokerID string, limit int) ([]*store.Dispatch, error) {
	if _, err := gate(ctx, "PendingDispatches"); err != nil {
		return nil, ignoreHidden(err)
	}
	return s.inner.PendingDispatches(ctx, brokerID, limit)
}

func (s *Store) GetDispatch(ctx context.Context, id string) (*store.Dispatch, error) {
	if _, err := gate(ctx, "GetDispatch"); err != nil {
		return nil, err
	}
	return s.inner.GetDispatch(ctx, id)
}

func (s *Store) NoteDispatchAttempt(ctx context.Context, id, result string) (int, error) {
	if _, err := gate(ctx, "NoteDispatchAttempt"); err != nil {
		return 0, err
	}
	return s.inner.NoteDispatchAttempt(ctx, id, result)
}

func (s *Store) FinishDispatch(ctx context.Context, id, status, result string) error {
	if _, err := gate(ctx, "FinishDispatch"); err != nil {
		return err
	}
	return s.inner.FinishDispatch(ctx, id, status, result)
}

func (s *Store) PruneDispatches(ctx context.Context, cutoff time.Time) (int, error) {
	if _, err := gate(ctx, "PruneDispatches"); err != nil {
		return 0, err
	}
	return s.inner.PruneDispatches(ctx, cutoff)
}

// Idempotency-Key records: a request reaches its own caller's.

func (s *Store) GetIdempotencyRecord(ctx context.Context, caller, key string, now time.Time) (*store.IdempotencyRecord, error) {
	if _, err := decide(ctx, "GetIdempotencyRecord", Subject{KeyOwner: caller}); err != nil {
		return nil, err
	}
	return s.inner.GetIdempotencyRecord(ctx, caller, key, now)
}

func (s *Store) CompleteIdempotencyRecord(ctx context.Context, caller, key string, status int, response []byte) error {
	if _, err := decide(ctx, "CompleteIdempotencyRecord", Subject{KeyOwner: caller}); err != nil {
		return err
	}
	return s.inner.CompleteIdempotencyRecord(ctx, caller, key, status, response)
}

func (s *Store) PruneIdempotencyRecords(ctx context.Context, now time.Time) (int, error) {
	if _, err := gate(ctx, "PruneIdempotencyRecords"); err != nil {
		return 0, err
	}
	return s.inner.PruneIdempotencyRecords(ctx, now)
}

// Broker nonces: authentication's, before there is a caller.

func (s *Store) UseNonce(ctx context.Context, brokerID, nonce string, now, expiresAt time.Time) error {
	if _, err := gate(ctx, "UseNonce"); err != nil {
		return err
	}
	return s.inner.UseNonce(ctx, brokerID, nonce, now, expiresAt)
}

func (s *Store) PruneNonces(ctx context.Context, now time.Time) (int, error) {
	if _, err := gate(ctx, "PruneNonces"); err != nil {
		return 0, err
	}
	return s.inner.PruneNonces(ctx, now)
}
