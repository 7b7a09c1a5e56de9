package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const agentCols = `id, slug, project_id, broker_id, profile, harness, image, command, env, phase, status_message,
	container_status, run_id, generation, generations, role, created_by, delegator, parent_agent_id, payload,
	ports, port_mappings, scopes, delegation_chain, passthrough, secret_names, version, created_at, updated_at`

const insertAgentSQL = `INSERT INTO agents (` + agentCols + `)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// updateAgentSQL writes everything but id and created_at, only if the
// version still matches (last two arguments: id, expected version).
const updateAgentSQL = `UPDATE agents SET slug = ?, project_id = ?, broker_id = ?, profile = ?, harness = ?,
	image = ?, command = ?, env = ?, phase = ?, status_message = ?, container_status = ?, run_id = ?,
	generation = ?, generations = ?, role = ?, created_by = ?, delegator = ?, parent_agent_id = ?, payload = ?,
	ports = ?, port_mappings = ?, scopes = ?, delegation_chain = ?, passthrough = ?, secret_names = ?,
	version = version + 1, updated_at = ? WHERE id = ? AND version = ?`

// updateAgentSameKeysSQL is updateAgentSQL for the common case of a status
// update: it leaves the indexed columns (slug, project_id, broker_id) out
// of the SET list and instead requires them unchanged. SQLite rewrites an
// index entry whenever its column is assigned, even to the same value;
// this saves three index page writes to the WAL per update. Arguments: the
// non-key fields, updated_at, id, version, slug, project_id, broker_id.
const updateAgentSameKeysSQL = `UPDATE agents SET profile = ?, harness = ?,
	image = ?, command = ?, env = ?, phase = ?, status_message = ?, container_status = ?, run_id = ?,
	generation = ?, generations = ?, role = ?, created_by = ?, delegator = ?, parent_agent_id = ?, payload = ?,
	ports = ?, port_mappings = ?, scopes = ?, delegation_chain = ?, passthrough = ?, secret_names = ?,
	version = version + 1, updated_at = ? WHERE id = ? AND version = ? AND slug = ? AND project_id = ? AND broker_id = ?`

func scanAgent(sc scanner) (*store.Agent, error) {
	var a store.Agent
	var cmd, env, gens, payload, ports, mappings, scopes, chain, secrets []byte
	var created, updated int64
	if err := sc.Scan(&a.ID, &a.Slug, &a.ProjectID, &a.BrokerID, &a.Profile, &a.Harness, &a.Image, &cmd, &env,
		&a.Phase, &a.StatusMessage, &a.ContainerStatus, &a.RunID, &a.Generation, &gens, &a.Role, &a.CreatedBy,
		&a.Delegator, &a.ParentAgentID, &payload, &ports, &mappings, &scopes, &chain,
		&a.Passthrough, &secrets, &a.Version, &created, &updated); err != nil {
		return nil, err
	}
	if err := dbutil.UnJSON(cmd, &a.Command); err != nil {
		return nil, fmt.Errorf("agent %s command: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(env, &a.Env); err != nil {
		return nil, fmt.Errorf("agent %s env: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(gens, &a.Generations); err != nil {
		return nil, fmt.Errorf("agent %s generations: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(ports, &a.Ports); err != nil {
		return nil, fmt.Errorf("agent %s ports: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(mappings, &a.PortMappings); err != nil {
		return nil, fmt.Errorf("agent %s port mappings: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(scopes, &a.Scopes); err != nil {
		return nil, fmt.Errorf("agent %s scopes: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(chain, &a.DelegationChain); err != nil {
		return nil, fmt.Errorf("agent %s delegation chain: %w", a.ID, err)
	}
	if err := dbutil.UnJSON(secrets, &a.SecretNames); err != nil {
		return nil, fmt.Errorf("agent %s secret names: %w", a.ID, err)
	}
	if payload != nil {
		a.Payload = payload
	}
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &a, nil
}

// agentFields encodes the columns UpdateAgent writes, in updateAgentSQL's
// order (insertAgentSQL puts id first and version and times last).
func agentFields(a *store.Agent) ([]any, error) {
	cmd, err := dbutil.JSON(a.Command)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	env, err := dbutil.JSON(a.Env)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	gens, err := dbutil.JSON(a.Generations)
	if err != nil {
		return nil, fmt.Errorf("generations: %w", err)
	}
	payload, err := dbutil.Payload(a.Payload)
	if err != nil {
		return nil, err
	}
	ports, err := dbutil.JSON(a.Ports)
	if err != nil {
		return nil, fmt.Errorf("ports: %w", err)
	}
	mappings, err := dbutil.JSON(a.PortMappings)
	if err != nil {
		return nil, fmt.Errorf("port mappings: %w", err)
	}
	scopes, err := dbutil.Strings(a.Scopes)
	if err != nil {
		return nil, fmt.Errorf("scopes: %w", err)
	}
	chain, err := dbutil.Strings(a.DelegationChain)
	if err != nil {
		return nil, fmt.Errorf("delegation chain: %w", err)
	}
	secrets, err := dbutil.Strings(a.SecretNames)
	if err != nil {
		return nil, fmt.Errorf("secret names: %w", err)
	}
	return []any{a.Slug, a.ProjectID, a.BrokerID, a.Profile, a.Harness, a.Image, text(cmd), text(env), a.Phase,
		a.StatusMessage, a.ContainerStatus, a.RunID, a.Generation, text(gens), a.Role, a.CreatedBy, a.Delegator,
		a.ParentAgentID, text(payload), text(ports), text(mappings), text(scopes), text(chain), a.Passthrough,
		text(secrets)}, nil
}

// CreateAgent inserts a (filling in ID, times and Version 1 when zero) and,
// when reserveLimit is not nil, takes its capacity reservation on
// a.BrokerID in the same transaction.
func (s *Store) CreateAgent(ctx context.Context, a *store.Agent, reserveLimit *int) error {
	_, err := s.createAgent(ctx, a, store.CreateAgentOptions{ReserveLimit: reserveLimit}, nil)
	return err
}

// CreateAgentWith creates the agent with what o asks for in one
// transaction; see store.Store.
func (s *Store) CreateAgentWith(ctx context.Context, a *store.Agent, o store.CreateAgentOptions) (bool, error) {
	if o.Key == nil {
		return s.createAgent(ctx, a, o, nil)
	}
	r, err := claimable(o.Key)
	if err != nil {
		return false, err
	}
	linked, err := s.createAgent(ctx, a, o, &r)
	if err != nil {
		return false, err
	}
	r.AgentID = a.ID
	*o.Key = r
	return linked, nil
}

// createAgent inserts the agent and, in the same transaction, claims the
// idempotency record rec first (when not nil), deletes the agent it
// replaces, links its broker to its project and takes its reservation, as
// o asks. It reports whether it made the link.
func (s *Store) createAgent(ctx context.Context, a *store.Agent, o store.CreateAgentOptions, rec *store.IdempotencyRecord) (linked bool, _ error) {
	reserveLimit, link := o.ReserveLimit, o.LinkProvider
	n := *a
	if n.ID == "" {
		n.ID = dbutil.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = dbutil.Now()
	}
	n.CreatedAt = dbutil.Time(n.CreatedAt)
	if n.UpdatedAt.IsZero() {
		n.UpdatedAt = n.CreatedAt
	}
	n.UpdatedAt = dbutil.Time(n.UpdatedAt)
	if n.Version == 0 {
		n.Version = 1
	}
	n.Generations = dbutil.Generations(n.Generations)
	what := fmt.Sprintf("create agent %q in project %q", n.Slug, n.ProjectID)
	fields, err := agentFields(&n)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	args := make([]any, 0, 29)
	args = append(args, n.ID)
	args = append(args, fields...)
	args = append(args, n.Version, micros(n.CreatedAt), micros(n.UpdatedAt))

	if reserveLimit == nil && rec == nil && !link && o.Replace == nil {
		// A single statement commits on its own: no BEGIN/COMMIT needed.
		if _, err := s.insertAgent.ExecContext(ctx, args...); err != nil {
			return false, mapErr(err, what)
		}
	} else {
		err := s.write(ctx, func(tx *sql.Tx) error {
			linked = false // a retried transaction starts over
			if rec != nil {
				if err := claimKeyTx(ctx, tx, rec, n.ID); err != nil {
					return err
				}
			}
			if old := o.Replace; old != nil {
				res, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE id = ? AND version = ?`, old.ID, old.Version)
				if err := mustAffect(res, err, fmt.Sprintf("replace agent %q", old.ID)); err != nil {
					if errors.Is(err, store.ErrNotFound) {
						err = fmt.Errorf("replace agent %q at version %d: %w", old.ID, old.Version, store.ErrConflict)
					}
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM tokens WHERE kind = ? AND agent_id = ?`, store.TokenAgent, old.ID); err != nil {
					return mapErr(err, fmt.Sprintf("replace agent %q", old.ID))
				}
			}
			if _, err := tx.StmtContext(ctx, s.insertAgent).ExecContext(ctx, args...); err != nil {
				return mapErr(err, what)
			}
			if link {
				res, err := tx.ExecContext(ctx, `INSERT INTO project_providers (project_id, broker_id) VALUES (?, ?)
					ON CONFLICT DO NOTHING`, n.ProjectID, n.BrokerID)
				if err != nil {
					return mapErr(err, fmt.Sprintf("link provider %q to project %q", n.BrokerID, n.ProjectID))
				}
				rows, err := res.RowsAffected()
				if err != nil {
					return err
				}
				linked = rows == 1
			}
			if reserveLimit == nil {
				return nil
			}
			return s.reserveTx(ctx, tx, n.BrokerID, n.ID, *reserveLimit)
		})
		if err != nil {
			return false, err
		}
	}
	*a = n
	return linked, nil
}

// GetAgent looks up by ID.
func (s *Store) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	a, err := scanAgent(s.selectAgent.QueryRowContext(ctx, id))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("agent %q", id))
	}
	return a, nil
}

// GetAgentBySlug looks up by project and slug.
func (s *Store) GetAgentBySlug(ctx context.Context, projectID, slug string) (*store.Agent, error) {
	a, err := scanAgent(s.r.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents WHERE project_id = ? AND slug = ?`, projectID, slug))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("agent %q in project %q", slug, projectID))
	}
	return a, nil
}

// ListAgents lists the agents matching f in ID order.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter, page store.Page) ([]*store.Agent, string, int, error) {
	var where string
	var args []any
	add := func(col, v string) {
		if v == "" {
			return
		}
		if where != "" {
			where += " AND "
		}
		where += col + " = ?"
		args = append(args, v)
	}
	add("project_id", f.ProjectID)
	add("broker_id", f.BrokerID)
	add("phase", f.Phase)
	items, next, total, err := list(ctx, s, "agents", agentCols, where, args, page, scanAgent,
		func(a *store.Agent) string { return a.ID })
	if err != nil {
		return nil, "", 0, mapErr(err, "list agents")
	}
	return items, next, total, nil
}

// UpdateAgent writes a if a.Version is the stored version, then increments
// a.Version and sets a.UpdatedAt; ErrConflict if the stored version moved
// on, ErrNotFound if the agent is gone.
func (s *Store) UpdateAgent(ctx context.Context, a *store.Agent) error {
	what := fmt.Sprintf("update agent %q", a.ID)
	gens := dbutil.Generations(a.Generations)
	n := *a
	n.Generations = gens
	fields, err := agentFields(&n)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	now := dbutil.Now()
	// Fast path first (keys unchanged); if it matches nothing, the full
	// statement either changes the keys or meets the version conflict.
	const nkeys = 3 // slug, project_id, broker_id lead the fields
	fast := make([]any, 0, len(fields)+5)
	fast = append(fast, fields[nkeys:]...)
	fast = append(fast, micros(now), a.ID, a.Version)
	fast = append(fast, fields[:nkeys]...)
	ok, err := execOne(ctx, s.updateAgentSameKeys, fast)
	if err == nil && !ok {
		ok, err = execOne(ctx, s.updateAgent, append(fields, micros(now), a.ID, a.Version))
	}
	if err != nil {
		return mapErr(err, what)
	}
	if !ok {
		// Tell a stale copy from a deleted agent. The answer can race with
		// a concurrent delete, but either error is then true.
		var v int64
		if err := s.agentVersion.QueryRowContext(ctx, a.ID).Scan(&v); err != nil {
			return mapErr(err, what)
		}
		return fmt.Errorf("%s: version %d, stored %d: %w", what, a.Version, v, store.ErrConflict)
	}
	a.Version++
	a.UpdatedAt = now
	a.Generations = gens
	return nil
}

// execOne runs an UPDATE and reports whether it changed a row.
func execOne(ctx context.Context, st *sql.Stmt, args []any) (bool, error) {
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteAgent deletes the agent, its reservation (by cascade) and its
// agent tokens, which must not outlive it.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	what := fmt.Sprintf("delete agent %q", id)
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE id = ?`, id)
		if err := mustAffect(res, err, what); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM tokens WHERE kind = ? AND agent_id = ?`, store.TokenAgent, id)
		return mapErr(err, what)
	})
}
