package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	sqlstore "github.com/scion-go/scion/store/sql"
)

// writes.go is PostgreSQL's sqlstore.AgentWrites. Its writers run
// concurrently under READ COMMITTED, so each write that counts a broker's
// reservations first locks the broker's row; and each is one batch, sent
// in one round trip.
//
// The batches send statements that refuse through scion_refuse (migration
// 0005) rather than answer "no": an error aborts the implicit transaction
// of the batch they are in (a single Sync), so an agent inserted in the
// same batch is rolled back with them and a create is one round trip.

// claimKeySQL is sqlstore.ClaimKeySQL, refusing (codeKeyInUse) when the
// key is held. A concurrent claim of the same key waits on the primary key
// for the first transaction and then sees its row, unexpired.
const claimKeySQL = `WITH claimed AS (` + sqlstore.ClaimKeySQL + ` RETURNING 1)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM claimed) THEN 1
		ELSE scion_refuse('` + codeKeyInUse + `', 'idempotency key in use') END`

// replaceAgentSQL deletes the agent a create replaces (with its agent
// tokens; its reservation goes by cascade) if it is still at the version
// the Hub decided on, or refuses (codeStale).
const replaceAgentSQL = `WITH a AS (DELETE FROM agents WHERE id = $1 AND version = $2 RETURNING id),
		t AS (DELETE FROM tokens WHERE kind = 'agent' AND agent_id IN (SELECT id FROM a))
	SELECT CASE WHEN EXISTS (SELECT 1 FROM a) THEN 1
		ELSE scion_refuse('` + codeStale + `', 'the agent to replace has changed') END`

// updateAgentSQL is sqlstore.UpdateAgentSQL, refusing (codeStale) when it
// matches no row (a stale version or a deleted agent), so that the
// reservation queued after it is not written either.
const updateAgentSQL = `WITH u AS (` + sqlstore.UpdateAgentSQL + ` RETURNING 1)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM u) THEN 1
		ELSE scion_refuse('` + codeStale + `', 'the agent to update has changed') END`

// Reserving is two statements: lock the broker's row (FOR NO KEY UPDATE:
// it excludes other reservers but not the key-share locks of foreign-key
// checks), then reserveSQL, which decides and inserts. The decision must
// be a separate statement from the lock: under READ COMMITTED each
// statement takes a fresh snapshot, so the count sees every reservation
// committed by whoever held the lock before us, while a count in the
// locking statement itself could be stale. A broker that is gone refuses
// (codeNotFound) unless the agent holds its slot there (a forced
// deregistration leaves it, migration 0007): reserveSQL then keeps it, as
// for any holder. Arguments: broker, agent.
const lockBrokerSQL = `WITH locked AS (SELECT 1 FROM runtime_brokers WHERE id = $1 FOR NO KEY UPDATE)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM locked)
			OR EXISTS (SELECT 1 FROM reservations WHERE agent_id = $2 AND broker_id = $1) THEN 1
		ELSE scion_refuse('` + codeNotFound + `', 'no runtime broker ' || $1) END`

// keyShareBrokerSQL checks that the broker of a create taking no slot
// exists and holds it FOR KEY SHARE until the create commits: that
// conflicts with the FOR UPDATE lock of DeleteBroker's DELETE (but not
// with reservers' FOR NO KEY UPDATE nor with status updates), so a
// concurrent deletion either waits for the create and then counts its
// agent, or is committed first and this refuses (codeNotFound: under READ
// COMMITTED a row deleted while we waited is not returned).
// Arguments: broker.
const keyShareBrokerSQL = `WITH locked AS (SELECT 1 FROM runtime_brokers WHERE id = $1 FOR KEY SHARE)
	SELECT CASE WHEN EXISTS (SELECT 1 FROM locked) THEN 1
		ELSE scion_refuse('` + codeNotFound + `', 'no runtime broker ' || $1) END`

// reserveSQL takes the agent's reservation, never moving one (multi-broker
// spec, "Capacity of flat Runtime Brokers"): an agent already holding its
// slot on this broker has nothing to take (idempotent); one holding it on
// another broker is refused (codeScope); otherwise the slot is inserted
// if the limit is 0 (unlimited) or the broker is below it, else refused
// (codeQuota). The broker's lock does not cover the agent's other slot: a
// concurrent Reserve of the same agent on another broker can insert after
// our snapshot, so the insert meets its row on the primary key, waits for
// it to commit and then updates it only if it is on this broker (a racing
// Reserve here: RETURNING one row, success); a row on another broker is
// left alone, RETURNING nothing, and refused (codeScope). A
// data-modifying WITH runs whether or not the main query reads it.
// Arguments: agent, broker, created_at, limit.
const reserveSQL = `WITH decision AS (
		SELECT held,
			held IS NULL AND ($4::int <= 0
				OR (SELECT count(*) FROM reservations WHERE broker_id = $2) < $4::int) AS take
		FROM (SELECT (SELECT broker_id FROM reservations WHERE agent_id = $1) AS held) h
	), ins AS (
		INSERT INTO reservations (agent_id, broker_id, created_at)
		SELECT $1, $2, $3 FROM decision WHERE take
		ON CONFLICT (agent_id) DO UPDATE SET broker_id = reservations.broker_id
			WHERE reservations.broker_id = excluded.broker_id
		RETURNING 1
	)
	SELECT CASE
		WHEN held = $2 THEN 1
		WHEN held IS NOT NULL THEN scion_refuse('` + codeScope + `',
			'agent ' || $1 || ' holds its slot on broker ' || held)
		WHEN NOT take THEN scion_refuse('` + codeQuota + `', 'broker ' || $2 || ' is full')
		WHEN EXISTS (SELECT 1 FROM ins) THEN 1
		ELSE scion_refuse('` + codeScope + `', 'agent ' || $1 || ' took its slot on another broker')
	END FROM decision`

// CreateAgent sends claim, replace, insert, link, lock and reserve (or,
// taking no slot, keyShareBrokerSQL) in one batch. The key goes first so that a replay is reported as ErrKeyInUse
// rather than as its own duplicate slug; the agent before the reservation
// so that a duplicate slug is reported as ErrAlreadyExists before any
// quota question.
func (d *dialect) CreateAgent(ctx context.Context, c *sqlstore.AgentCreate) (linked bool, _ error) {
	a := c.Agent
	what := fmt.Sprintf("create agent %q in project %q", a.Slug, a.ProjectID)
	b := &pgx.Batch{}
	if c.Key != nil {
		b.Queue(claimKeySQL, c.KeyArgs...)
	}
	if c.Replace != nil {
		b.Queue(replaceAgentSQL, c.Replace.ID, c.Replace.Version)
	}
	b.Queue(sqlstore.InsertAgentSQL, c.Args...)
	if c.Link {
		b.Queue(sqlstore.LinkProviderSQL, a.ProjectID, a.BrokerID)
	}
	checkBroker := c.ReserveLimit == nil && a.BrokerID != ""
	if c.ReserveLimit != nil {
		queueReserve(b, a.BrokerID, a.ID, *c.ReserveLimit, a.CreatedAt)
	} else if checkBroker {
		b.Queue(keyShareBrokerSQL, a.BrokerID)
	}
	br := d.pool.SendBatch(ctx, b)
	err := func() error {
		var one int
		if c.Key != nil {
			err := br.QueryRow().Scan(&one)
			if refusedWith(err, codeKeyInUse) {
				return sqlstore.KeyInUse(c.Key)
			}
			if err != nil {
				return d.mapErr(err, fmt.Sprintf("claim idempotency key %q", c.Key.Key))
			}
		}
		if old := c.Replace; old != nil {
			err := br.QueryRow().Scan(&one)
			if refusedWith(err, codeStale) {
				return sqlstore.ReplaceConflict(old)
			}
			if err != nil {
				return d.mapErr(err, fmt.Sprintf("replace agent %q", old.ID))
			}
		}
		if _, err := br.Exec(); err != nil {
			return d.mapErr(err, what)
		}
		if c.Link {
			tag, err := br.Exec()
			if err != nil {
				return d.mapErr(err, fmt.Sprintf("link provider broker %q to project %q", a.BrokerID, a.ProjectID))
			}
			linked = tag.RowsAffected() == 1
		}
		if checkBroker {
			if err := br.QueryRow().Scan(&one); err != nil {
				if refusedWith(err, codeNotFound) {
					return sqlstore.BrokerGone(a.BrokerID, what)
				}
				return d.mapErr(err, fmt.Sprintf("broker %q of %s", a.BrokerID, what))
			}
		}
		if c.ReserveLimit == nil {
			return nil
		}
		return d.readReserve(br, a.BrokerID, a.ID, *c.ReserveLimit)
	}()
	// Close reports the commit: a batch's implicit transaction commits at
	// its Sync, after the last statement.
	if cerr := br.Close(); err == nil && cerr != nil {
		err = d.mapErr(cerr, what)
	}
	return linked, err
}

// queueReserve adds the two reserving statements to b.
func queueReserve(b *pgx.Batch, brokerID, agentID string, limit int, now time.Time) {
	b.Queue(lockBrokerSQL, brokerID, agentID)
	b.Queue(reserveSQL, agentID, brokerID, now, limit)
}

// readReserve reads the results of queueReserve's statements: nil, or
// ErrQuota (broker full), ErrReservationScope (the agent holds its slot
// on another broker) or ErrNotFound (no such broker or agent).
func (d *dialect) readReserve(br pgx.BatchResults, brokerID, agentID string, limit int) error {
	what := fmt.Sprintf("reserve on broker %q for agent %q", brokerID, agentID)
	var one int
	if err := br.QueryRow().Scan(&one); err != nil {
		return d.mapErr(err, "broker: "+what)
	}
	if err := br.QueryRow().Scan(&one); err != nil {
		if refusedWith(err, codeQuota) {
			return sqlstore.QuotaError(brokerID, limit)
		}
		return d.mapErr(err, what) // codeScope: its message names the broker
	}
	return nil
}

// Reserve sends the lock and the reservation in one batch, which runs as
// one implicit transaction and so holds the broker lock until both are
// done.
func (d *dialect) Reserve(ctx context.Context, brokerID, agentID string, limit int, now time.Time) error {
	b := &pgx.Batch{}
	queueReserve(b, brokerID, agentID, limit, now)
	br := d.pool.SendBatch(ctx, b)
	err := d.readReserve(br, brokerID, agentID, limit)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = d.mapErr(cerr, fmt.Sprintf("reserve on broker %q for agent %q", brokerID, agentID))
	}
	return err
}

// UpdateAgent runs the update alone, one statement, or, with a
// reservation, sends the update, the lock and the reservation in one batch
// (one implicit transaction: a refused reservation rolls the update back).
func (d *dialect) UpdateAgent(ctx context.Context, u *sqlstore.AgentUpdate) (updated bool, _ error) {
	if u.ReserveLimit == nil && !u.Link && !u.Release {
		tag, err := d.pool.Exec(ctx, sqlstore.UpdateAgentSQL, u.Args...)
		if err != nil {
			return false, d.mapErr(err, u.What)
		}
		return tag.RowsAffected() == 1, nil
	}
	a := u.Agent
	b := &pgx.Batch{}
	b.Queue(updateAgentSQL, u.Args...)
	if u.Link {
		b.Queue(sqlstore.LinkProviderSQL, a.ProjectID, a.BrokerID)
	}
	if u.MoveSlot {
		b.Queue(sqlstore.ReleaseOtherSlotSQL, a.ID, a.BrokerID)
	}
	if u.Release {
		b.Queue(sqlstore.ReleaseSlotSQL, a.ID)
	}
	if u.ReserveLimit != nil {
		queueReserve(b, a.BrokerID, a.ID, *u.ReserveLimit, a.UpdatedAt)
	}
	br := d.pool.SendBatch(ctx, b)
	updated = true
	err := func() error {
		var one int
		err := br.QueryRow().Scan(&one)
		if refusedWith(err, codeStale) {
			updated = false
			return nil
		}
		if err != nil {
			return d.mapErr(err, u.What)
		}
		for range btoi(u.Link) + btoi(u.MoveSlot) + btoi(u.Release) {
			if _, err := br.Exec(); err != nil {
				return d.mapErr(err, u.What)
			}
		}
		if u.ReserveLimit == nil {
			return nil
		}
		return d.readReserve(br, a.BrokerID, a.ID, *u.ReserveLimit)
	}()
	if cerr := br.Close(); err == nil && updated && cerr != nil {
		err = d.mapErr(cerr, u.What)
	}
	return updated, err
}

// DeleteAgent deletes the agent, its reservation (by cascade) and its
// agent tokens in one statement.
func (d *dialect) DeleteAgent(ctx context.Context, id string) (bool, error) {
	var n int
	err := d.pool.QueryRow(ctx, `WITH a AS (DELETE FROM agents WHERE id = $1 RETURNING id),
		t AS (DELETE FROM tokens WHERE kind = 'agent' AND agent_id IN (SELECT id FROM a))
		SELECT count(*) FROM a`, id).Scan(&n)
	return n > 0, err
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
