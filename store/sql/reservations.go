package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// reserveCondSQL inserts an agent's reservation only while the broker
// exists and is under its limit ($4 <= 0: unlimited). Run inside a
// serialised write transaction (see Batcher), so count and insert cannot
// interleave with another writer. (The broker is checked here, not by a
// foreign key: a forced deregistration leaves its agents' reservations in
// place, migration 0007.) It never replaces a reservation: a reservation
// is never moved between brokers (multi-broker spec, "Capacity of flat
// Runtime Brokers"), so an agent already holding one is a unique
// violation; callers check first (reserveOnceTx).
// Arguments: agent, broker, created_at, limit.
const reserveCondSQL = `INSERT INTO reservations (agent_id, broker_id, created_at)
	SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM runtime_brokers WHERE id = $2)
		AND ($4 <= 0 OR (SELECT count(*) FROM reservations WHERE broker_id = $2) < $4)`

// reserveTx takes a slot for agentID, holding none, on brokerID inside
// tx, or fails with ErrQuota (broker full) or ErrNotFound (no such broker
// or agent).
func (s *Store) reserveTx(ctx context.Context, tx Querier, brokerID, agentID string, limit int) error {
	n, err := tx.Exec(ctx, reserveCondSQL, agentID, brokerID, s.d.Time(dbutil.Now()), limit)
	what := func() string { return fmt.Sprintf("reserve on broker %q for agent %q", brokerID, agentID) }
	if err != nil {
		return s.mapErr(err, what())
	}
	if n == 0 {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runtime_brokers WHERE id = $1)`, brokerID).Scan(&exists); err != nil {
			return s.mapErr(err, what())
		}
		if !exists {
			return fmt.Errorf("%s: no such broker: %w", what(), store.ErrNotFound)
		}
		return QuotaError(brokerID, limit)
	}
	return nil
}

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
	if s.batch != nil {
		return s.batch.Reserve(ctx, brokerID, agentID, limit, dbutil.Now())
	}
	return s.d.Tx(ctx, func(tx Querier) error { return s.reserveOnceTx(ctx, tx, brokerID, agentID, limit) })
}

// reserveOnceTx is Reserve inside tx: nothing to take for an agent already
// holding its slot on brokerID, ErrReservationScope for one holding it on
// another broker (ErrNotFound first when brokerID does not exist, as the
// PostgreSQL batch answers), reserveTx otherwise.
func (s *Store) reserveOnceTx(ctx context.Context, tx Querier, brokerID, agentID string, limit int) error {
	var cur string
	err := tx.QueryRow(ctx, `SELECT broker_id FROM reservations WHERE agent_id = $1`, agentID).Scan(&cur)
	switch {
	case err == nil && cur == brokerID:
		return nil
	case err == nil:
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runtime_brokers WHERE id = $1)`, brokerID).Scan(&exists); err != nil {
			return s.mapErr(err, fmt.Sprintf("broker %q", brokerID))
		}
		if !exists {
			return fmt.Errorf("reserve on broker %q for agent %q: no such broker: %w", brokerID, agentID, store.ErrNotFound)
		}
		return ScopeError(brokerID, agentID, cur)
	case !errors.Is(err, sql.ErrNoRows):
		return s.mapErr(err, fmt.Sprintf("reservation of agent %q", agentID))
	}
	return s.reserveTx(ctx, tx, brokerID, agentID, limit)
}

// Release frees the agent's slot, if it holds one.
func (s *Store) Release(ctx context.Context, agentID string) error {
	_, err := s.w.Exec(ctx, `DELETE FROM reservations WHERE agent_id = $1`, agentID)
	return s.mapErr(err, fmt.Sprintf("release agent %q", agentID))
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
