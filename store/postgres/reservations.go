package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// Reserving is two statements sent together in one round trip:
//
//  1. lock the broker's row (FOR NO KEY UPDATE: it excludes other reservers
//     but not the key-share locks of foreign-key checks), then
//  2. reserveSQL, which decides and inserts.
//
// The decision must be a separate statement from the lock: under READ
// COMMITTED each statement takes a fresh snapshot, so the count in 2 sees
// every reservation committed by whoever held the lock before us, while a
// count in the locking statement itself could be stale. Checking and
// inserting under one lock is what keeps concurrent Hubs from overshooting
// the limit.
//
// Both refuse through scion_refuse (migration 0005) rather than answer
// "no": an error aborts the implicit transaction of the batch they are
// sent in, so an agent inserted in the same batch is rolled back with them
// and a create is one round trip. Arguments: broker.
const lockBrokerSQL = `WITH locked AS (SELECT 1 FROM runtime_brokers WHERE id = $1 FOR NO KEY UPDATE)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM locked) THEN 1
		ELSE scion_refuse('` + codeNotFound + `', 'no runtime broker ' || $1) END`

// reserveSQL inserts (or moves) the agent's reservation if allowed: the
// limit is 0 (unlimited), the agent already holds a slot on this broker
// (idempotent: the upsert then changes nothing), or the broker is below
// the limit; otherwise it refuses (codeQuota). A data-modifying WITH runs
// whether or not the main query reads it. PostgreSQL evaluates the ORs
// lazily, so an unlimited reservation does not count.
// Arguments: agent, broker, created_at, limit.
const reserveSQL = `WITH decision AS (
		SELECT $4::int <= 0
			OR EXISTS (SELECT 1 FROM reservations WHERE agent_id = $1 AND broker_id = $2)
			OR (SELECT count(*) FROM reservations WHERE broker_id = $2) < $4::int AS allowed
	), upsert AS (
		INSERT INTO reservations (agent_id, broker_id, created_at)
		SELECT $1, $2, $3 FROM decision WHERE allowed
		ON CONFLICT (agent_id) DO UPDATE SET broker_id = excluded.broker_id, created_at = excluded.created_at
			WHERE reservations.broker_id <> excluded.broker_id
	)
	SELECT CASE WHEN allowed THEN 1 ELSE scion_refuse('` + codeQuota + `', 'broker ' || $2 || ' is full') END FROM decision`

// queueReserve adds the two reserving statements to b.
func queueReserve(b *pgx.Batch, brokerID, agentID string, limit int) {
	b.Queue(lockBrokerSQL, brokerID)
	b.Queue(reserveSQL, agentID, brokerID, dbutil.Now(), limit)
}

// readReserve reads the results of queueReserve's statements: nil, or
// ErrQuota (broker full) or ErrNotFound (no such broker or agent).
func readReserve(br pgx.BatchResults, brokerID, agentID string, limit int) error {
	what := fmt.Sprintf("reserve on broker %q for agent %q", brokerID, agentID)
	var one int
	if err := br.QueryRow().Scan(&one); err != nil {
		return mapErr(err, "broker: "+what)
	}
	if err := br.QueryRow().Scan(&one); err != nil {
		if refusedWith(err, codeQuota) {
			return errQuota(brokerID, limit)
		}
		return mapErr(err, what)
	}
	return nil
}

// Reserve takes a capacity slot on brokerID for agentID unless the broker
// already holds limit slots (limit <= 0: unlimited). It is idempotent for
// an agent already holding a slot on brokerID; an agent holding a slot on
// another broker moves it (an agent runs on one broker at a time).
//
// One round trip: a batch runs as one implicit transaction, which holds
// the broker lock until both statements are done.
func (s *Store) Reserve(ctx context.Context, brokerID, agentID string, limit int) error {
	b := &pgx.Batch{}
	queueReserve(b, brokerID, agentID, limit)
	br := s.pool.SendBatch(ctx, b)
	err := readReserve(br, brokerID, agentID, limit)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = mapErr(cerr, fmt.Sprintf("reserve on broker %q for agent %q", brokerID, agentID))
	}
	return err
}

// Release frees the agent's slot, if it holds one.
func (s *Store) Release(ctx context.Context, agentID string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM reservations WHERE agent_id = $1`, agentID)
	return mapErr(err, fmt.Sprintf("release agent %q", agentID))
}

// CountReservations returns how many slots brokerID holds.
func (s *Store) CountReservations(ctx context.Context, brokerID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM reservations WHERE broker_id = $1`, brokerID).Scan(&n)
	return n, mapErr(err, fmt.Sprintf("count reservations of broker %q", brokerID))
}

// ReservationCounts returns the slots held per broker; brokers holding
// none are absent.
func (s *Store) ReservationCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT broker_id, count(*) FROM reservations GROUP BY broker_id`)
	if err != nil {
		return nil, mapErr(err, "reservation counts")
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, mapErr(err, "reservation counts")
		}
		out[id] = n
	}
	return out, mapErr(rows.Err(), "reservation counts")
}

// errQuota is the error for a full broker.
func errQuota(brokerID string, limit int) error {
	return fmt.Errorf("broker %q holds its limit of %d reservations: %w", brokerID, limit, store.ErrQuota)
}

// ReservedAgents returns the agents holding a slot on brokerID.
func (s *Store) ReservedAgents(ctx context.Context, brokerID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT agent_id FROM reservations WHERE broker_id = $1 ORDER BY agent_id`, brokerID)
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("reservations of broker %q", brokerID))
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
