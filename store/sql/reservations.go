package sqlstore

import (
	"context"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// ScopeError is the error for reserving on brokerID a slot for agentID,
// which holds its slot on another broker (heldOn, when known).
func ScopeError(brokerID, agentID, heldOn string) error {
	if heldOn != "" {
		return fmt.Errorf("reserve on broker %q for agent %q: it holds its slot on broker %q: %w",
			brokerID, agentID, heldOn, store.ErrReservationScope)
	}
	return fmt.Errorf("reserve on broker %q for agent %q: %w", brokerID, agentID, store.ErrReservationScope)
}

// QuotaError is the error for a full broker.
func QuotaError(brokerID string, limit int) error {
	return fmt.Errorf("broker %q holds its limit of %d reservations: %w", brokerID, limit, store.ErrQuota)
}

// Reserve takes a capacity slot on brokerID for agentID unless the broker
// already holds limit slots (limit <= 0: unlimited). It is idempotent for
// an agent already holding a slot on brokerID; an agent holding a slot on
// another broker is ErrReservationScope and nothing is written: a
// reservation is never moved (Release, then Reserve, changes brokers).
func (s *Store) Reserve(ctx context.Context, brokerID, agentID string, limit int) error {
	return s.d.Reserve(ctx, brokerID, agentID, limit, dbutil.Now())
}

// Release frees the agent's slot, if it holds one.
func (s *Store) Release(ctx context.Context, agentID string) error {
	_, err := s.w.Exec(ctx, `DELETE FROM reservations WHERE agent_id = $1`, agentID)
	return s.mapErr(err, fmt.Sprintf("release agent %q", agentID))
}

// ReleaseOn frees the agent's slot if it is held on brokerID.
func (s *Store) ReleaseOn(ctx context.Context, brokerID, agentID string) error {
	_, err := s.w.Exec(ctx, `DELETE FROM reservations WHERE agent_id = $1 AND broker_id = $2`, agentID, brokerID)
	return s.mapErr(err, fmt.Sprintf("release agent %q on broker %q", agentID, brokerID))
}

// CountReservations returns how many slots brokerID holds.
func (s *Store) CountReservations(ctx context.Context, brokerID string) (int, error) {
	var n int
	err := s.r.QueryRow(ctx, `SELECT count(*) FROM reservations WHERE broker_id = $1`, brokerID).Scan(&n)
	return n, s.mapErr(err, fmt.Sprintf("count reservations of broker %q", brokerID))
}

// ReservationCounts returns the slots held per broker; brokers holding
// none are absent.
func (s *Store) ReservationCounts(ctx context.Context) (map[string]int, error) {
	type count struct {
		id string
		n  int
	}
	rows, err := s.r.Query(ctx, `SELECT broker_id, count(*) FROM reservations GROUP BY broker_id`)
	counts, err := collect(rows, err, func(r Row) (c count, err error) { return c, r.Scan(&c.id, &c.n) })
	if err != nil {
		return nil, s.mapErr(err, "reservation counts")
	}
	out := make(map[string]int, len(counts))
	for _, c := range counts {
		out[c.id] = c.n
	}
	return out, nil
}

// ReservedAgents returns the agents holding a slot on brokerID.
func (s *Store) ReservedAgents(ctx context.Context, brokerID string) ([]string, error) {
	return s.strings(ctx, fmt.Sprintf("reservations of broker %q", brokerID),
		`SELECT agent_id FROM reservations WHERE broker_id = $1 ORDER BY agent_id`, brokerID)
}
