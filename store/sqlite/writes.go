package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	sqlstore "github.com/scion-go/scion/store/sql"
)

// writes.go is SQLite's sqlstore.AgentWrites. SQLite has one writer
// (every write transaction is BEGIN IMMEDIATE on the one write
// connection), so a count of a broker's reservations and the insert that
// follows it cannot interleave with another writer's: no row lock is
// needed, and there is none to take.

// updateAgentSameKeysSQL is UpdateAgentSQL with the key columns moved
// from the SET list to the WHERE clause. SQLite rewrites an index entry
// whenever its column is assigned, even to the same value: leaving the
// three indexed keys (slug, project_id, broker_id) out saves three index
// page writes per status update, the most frequent write there is. Its
// arguments are UpdateAgentSQL's with the three keys moved to the end.
const updateAgentSameKeysSQL = `UPDATE agents SET profile = $1, harness = $2,
	image = $3, command = $4, env = $5, phase = $6, status_message = $7, container_status = $8, run_id = $9,
	generation = $10, generations = $11, role = $12, created_by = $13, delegator = $14, parent_agent_id = $15,
	payload = $16, ports = $17, port_mappings = $18, scopes = $19, delegation_chain = $20, passthrough = $21,
	secret_names = $22, workspace_placement = $23, version = version + 1, updated_at = $24
	WHERE id = $25 AND version = $26 AND slug = $27 AND project_id = $28 AND broker_id = $29`

// reserveCondSQL inserts an agent's reservation only while the broker
// exists and is under its limit ($4 <= 0: unlimited). (The broker is
// checked here, not by a foreign key: a forced deregistration leaves its
// agents' reservations in place, migration 0007.) It never replaces a
// reservation: one is never moved between brokers (multi-broker spec,
// "Capacity of flat Runtime Brokers"), so reserveOnce checks first.
// Arguments: agent, broker, created_at, limit.
const reserveCondSQL = `INSERT INTO reservations (agent_id, broker_id, created_at)
	SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM runtime_brokers WHERE id = $2)
		AND ($4 <= 0 OR (SELECT count(*) FROM reservations WHERE broker_id = $2) < $4)`

const brokerExistsSQL = `SELECT EXISTS (SELECT 1 FROM runtime_brokers WHERE id = $1)`

// errStale ends UpdateAgent's transaction when its update matched no row.
var errStale = errors.New("stale agent")

func (d *dialect) mapErr(err error, what string) error { return sqlstore.MapErr(d.Classify, err, what) }

// CreateAgent runs c: a create that takes no slot and claims, replaces
// and links nothing is one statement; anything else one transaction.
func (d *dialect) CreateAgent(ctx context.Context, c *sqlstore.AgentCreate) (linked bool, _ error) {
	a := c.Agent
	what := fmt.Sprintf("create agent %q in project %q", a.Slug, a.ProjectID)
	if c.ReserveLimit == nil && c.Key == nil && !c.Link && c.Replace == nil {
		n, err := d.Writer().Exec(ctx, sqlstore.InsertAgentOnBrokerSQL, c.Args...)
		if err != nil {
			return false, d.mapErr(err, what)
		}
		if n == 0 {
			return false, sqlstore.BrokerGone(a.BrokerID, what)
		}
		return false, nil
	}
	err := d.Tx(ctx, func(tx sqlstore.Querier) error {
		var err error
		linked, err = d.createAgentTx(ctx, tx, c, what)
		return err
	})
	return linked, err
}

// createAgentTx runs c's statements one after the other in tx, in
// AgentCreate's order.
func (d *dialect) createAgentTx(ctx context.Context, tx sqlstore.Querier, c *sqlstore.AgentCreate, what string) (linked bool, _ error) {
	if c.Key != nil {
		n, err := tx.Exec(ctx, sqlstore.ClaimKeySQL, c.KeyArgs...)
		if err != nil {
			return false, d.mapErr(err, fmt.Sprintf("claim idempotency key %q", c.Key.Key))
		}
		if n == 0 {
			return false, sqlstore.KeyInUse(c.Key)
		}
	}
	if old := c.Replace; old != nil {
		n, err := tx.Exec(ctx, `DELETE FROM agents WHERE id = $1 AND version = $2`, old.ID, old.Version)
		if err != nil {
			return false, d.mapErr(err, fmt.Sprintf("replace agent %q", old.ID))
		}
		if n == 0 {
			return false, sqlstore.ReplaceConflict(old)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tokens WHERE kind = $1 AND agent_id = $2`, store.TokenAgent, old.ID); err != nil {
			return false, d.mapErr(err, fmt.Sprintf("replace agent %q", old.ID))
		}
	}
	if _, err := tx.Exec(ctx, sqlstore.InsertAgentSQL, c.Args...); err != nil {
		return false, d.mapErr(err, what)
	}
	a := c.Agent
	if c.Link {
		n, err := tx.Exec(ctx, sqlstore.LinkProviderSQL, a.ProjectID, a.BrokerID)
		if err != nil {
			return false, d.mapErr(err, fmt.Sprintf("link provider broker %q to project %q", a.BrokerID, a.ProjectID))
		}
		linked = n == 1
	}
	if c.ReserveLimit != nil {
		return linked, d.reserveTx(ctx, tx, a.BrokerID, a.ID, *c.ReserveLimit, a.CreatedAt)
	}
	if a.BrokerID == "" {
		return linked, nil
	}
	// Without a slot, check the broker here (reserveTx does otherwise).
	var exists bool
	if err := tx.QueryRow(ctx, brokerExistsSQL, a.BrokerID).Scan(&exists); err != nil {
		return false, d.mapErr(err, what)
	}
	if !exists {
		return false, sqlstore.BrokerGone(a.BrokerID, what)
	}
	return linked, nil
}

// UpdateAgent tries the statement that leaves the keys alone first; if
// it matches nothing, the full one either changes the keys or meets the
// version conflict. With a reservation both run in one transaction with
// reserveOnce.
func (d *dialect) UpdateAgent(ctx context.Context, u *sqlstore.AgentUpdate) (updated bool, _ error) {
	if u.ReserveLimit == nil && !u.Link && !u.Release {
		return d.updateIn(ctx, d.Writer(), u)
	}
	a := u.Agent
	err := d.Tx(ctx, func(tx sqlstore.Querier) error {
		ok, err := d.updateIn(ctx, tx, u)
		if err != nil {
			return err
		}
		if !ok {
			return errStale
		}
		if u.Link {
			if _, err := tx.Exec(ctx, sqlstore.LinkProviderSQL, a.ProjectID, a.BrokerID); err != nil {
				return d.mapErr(err, u.What)
			}
		}
		if u.MoveSlot {
			if _, err := tx.Exec(ctx, sqlstore.ReleaseOtherSlotSQL, a.ID, a.BrokerID); err != nil {
				return d.mapErr(err, u.What)
			}
		}
		if u.Release {
			if _, err := tx.Exec(ctx, sqlstore.ReleaseSlotSQL, a.ID); err != nil {
				return d.mapErr(err, u.What)
			}
		}
		if u.ReserveLimit == nil {
			return nil
		}
		return d.reserveOnce(ctx, tx, a.BrokerID, a.ID, *u.ReserveLimit, a.UpdatedAt)
	})
	if errors.Is(err, errStale) {
		return false, nil
	}
	return err == nil, err
}

// updateIn runs u's update in q; false if it matched no row.
func (d *dialect) updateIn(ctx context.Context, q sqlstore.Querier, u *sqlstore.AgentUpdate) (bool, error) {
	const nkeys = 3 // slug, project_id, broker_id lead the fields
	args := u.Args
	fast := append(append(make([]any, 0, len(args)), args[nkeys:]...), args[:nkeys]...)
	rows, err := q.Exec(ctx, updateAgentSameKeysSQL, fast...)
	if err == nil && rows == 0 {
		rows, err = q.Exec(ctx, sqlstore.UpdateAgentSQL, args...)
	}
	if err != nil {
		return false, d.mapErr(err, u.What)
	}
	return rows == 1, nil
}

// Reserve runs reserveOnce in a transaction of its own.
func (d *dialect) Reserve(ctx context.Context, brokerID, agentID string, limit int, now time.Time) error {
	return d.Tx(ctx, func(tx sqlstore.Querier) error { return d.reserveOnce(ctx, tx, brokerID, agentID, limit, now) })
}

// reserveOnce is Reserve inside tx: nothing to take for an agent already
// holding its slot on brokerID, ErrReservationScope for one holding it on
// another broker (ErrNotFound first when brokerID does not exist, as
// PostgreSQL's answers), reserveTx otherwise.
func (d *dialect) reserveOnce(ctx context.Context, tx sqlstore.Querier, brokerID, agentID string, limit int, now time.Time) error {
	var cur string
	err := tx.QueryRow(ctx, `SELECT broker_id FROM reservations WHERE agent_id = $1`, agentID).Scan(&cur)
	switch {
	case err == nil && cur == brokerID:
		return nil
	case err == nil:
		var exists bool
		if err := tx.QueryRow(ctx, brokerExistsSQL, brokerID).Scan(&exists); err != nil {
			return d.mapErr(err, fmt.Sprintf("broker %q", brokerID))
		}
		if !exists {
			return fmt.Errorf("reserve on broker %q for agent %q: no such broker: %w", brokerID, agentID, store.ErrNotFound)
		}
		return sqlstore.ScopeError(brokerID, agentID, cur)
	case !errors.Is(err, sql.ErrNoRows):
		return d.mapErr(err, fmt.Sprintf("reservation of agent %q", agentID))
	}
	return d.reserveTx(ctx, tx, brokerID, agentID, limit, now)
}

// reserveTx takes a slot for agentID, holding none, on brokerID inside
// tx, or fails with ErrQuota (broker full) or ErrNotFound (no such broker
// or agent).
func (d *dialect) reserveTx(ctx context.Context, tx sqlstore.Querier, brokerID, agentID string, limit int, now time.Time) error {
	what := func() string { return fmt.Sprintf("reserve on broker %q for agent %q", brokerID, agentID) }
	n, err := tx.Exec(ctx, reserveCondSQL, agentID, brokerID, d.Time(now), limit)
	if err != nil {
		return d.mapErr(err, what())
	}
	if n == 1 {
		return nil
	}
	var exists bool
	if err := tx.QueryRow(ctx, brokerExistsSQL, brokerID).Scan(&exists); err != nil {
		return d.mapErr(err, what())
	}
	if !exists {
		return fmt.Errorf("%s: no such broker: %w", what(), store.ErrNotFound)
	}
	return sqlstore.QuotaError(brokerID, limit)
}

// DeleteAgent deletes the agent and its agent tokens in one transaction
// (its reservation goes by cascade).
func (d *dialect) DeleteAgent(ctx context.Context, id string) (bool, error) {
	var found bool
	err := d.Tx(ctx, func(tx sqlstore.Querier) error {
		n, err := tx.Exec(ctx, `DELETE FROM agents WHERE id = $1`, id)
		if err != nil || n == 0 {
			return err
		}
		found = true
		_, err = tx.Exec(ctx, `DELETE FROM tokens WHERE kind = $1 AND agent_id = $2`, store.TokenAgent, id)
		return err
	})
	return found, err
}
