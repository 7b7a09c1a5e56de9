package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const agentCols = `id, slug, project_id, broker_id, profile, harness, image, command, env, phase, status_message,
	container_status, run_id, generation, generations, role, created_by, delegator, parent_agent_id, payload,
	ports, port_mappings, scopes, delegation_chain, passthrough, secret_names, version, created_at, updated_at`

const insertAgentSQL = `INSERT INTO agents (` + agentCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
	$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29)`

// updateAgentSQL writes everything but id and created_at, only if the
// version still matches ($27 id, $28 expected version).
const updateAgentSQL = `UPDATE agents SET slug = $1, project_id = $2, broker_id = $3, profile = $4, harness = $5,
	image = $6, command = $7, env = $8, phase = $9, status_message = $10, container_status = $11, run_id = $12,
	generation = $13, generations = $14, role = $15, created_by = $16, delegator = $17, parent_agent_id = $18,
	payload = $19, ports = $20, port_mappings = $21, scopes = $22, delegation_chain = $23, passthrough = $24,
	secret_names = $25, version = version + 1, updated_at = $26
	WHERE id = $27 AND version = $28`

func scanAgent(row pgx.Row) (*store.Agent, error) {
	var a store.Agent
	var cmd, env, gens, payload, ports, mappings, scopes, chain, secrets []byte
	if err := row.Scan(&a.ID, &a.Slug, &a.ProjectID, &a.BrokerID, &a.Profile, &a.Harness, &a.Image, &cmd, &env,
		&a.Phase, &a.StatusMessage, &a.ContainerStatus, &a.RunID, &a.Generation, &gens, &a.Role, &a.CreatedBy,
		&a.Delegator, &a.ParentAgentID, &payload, &ports, &mappings, &scopes, &chain,
		&a.Passthrough, &secrets, &a.Version, &a.CreatedAt, &a.UpdatedAt); err != nil {
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
	a.CreatedAt, a.UpdatedAt = utc(a.CreatedAt), utc(a.UpdatedAt)
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
	return []any{a.Slug, a.ProjectID, a.BrokerID, a.Profile, a.Harness, a.Image, jsonArg(cmd), jsonArg(env), a.Phase,
		a.StatusMessage, a.ContainerStatus, a.RunID, a.Generation, jsonArg(gens), a.Role, a.CreatedBy, a.Delegator,
		a.ParentAgentID, jsonArg(payload), jsonArg(ports), jsonArg(mappings), jsonArg(scopes), jsonArg(chain), a.Passthrough,
		jsonArg(secrets)}, nil
}

// CreateAgent inserts a (filling in ID, times and Version 1 when zero) and,
// when reserveLimit is not nil, takes its capacity reservation on
// a.BrokerID in the same transaction.
func (s *Store) CreateAgent(ctx context.Context, a *store.Agent, reserveLimit *int) error {
	_, err := s.createAgent(ctx, a, store.CreateAgentOptions{ReserveLimit: reserveLimit}, nil)
	return err
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
	args = append(args, n.Version, n.CreatedAt, n.UpdatedAt)

	if reserveLimit == nil && rec == nil && !link && o.Replace == nil {
		if _, err := s.pool.Exec(ctx, insertAgentSQL, args...); err != nil {
			return false, mapErr(err, what)
		}
	} else {
		// Claim, insert, lock and reserve go in one batch: one round trip
		// and one implicit transaction (a single Sync), in which a used
		// key, a missing broker or a full broker raises an error
		// (scion_refuse) that rolls the insert back. The key goes first
		// so that a replay is reported as ErrKeyInUse rather than as its
		// own duplicate slug; the agent before the reservation so that a
		// duplicate slug is reported as ErrAlreadyExists before any quota
		// question, as in store/sqlite.
		b := &pgx.Batch{}
		if rec != nil {
			queueClaimKey(b, rec, n.ID)
		}
		if o.Replace != nil {
			b.Queue(replaceAgentSQL, o.Replace.ID, o.Replace.Version, store.TokenAgent)
		}
		b.Queue(insertAgentSQL, args...)
		if link {
			b.Queue(linkProviderSQL, n.ProjectID, n.BrokerID)
		}
		if reserveLimit != nil {
			queueReserve(b, n.BrokerID, n.ID, *reserveLimit)
		}
		br := s.pool.SendBatch(ctx, b)
		err := func() error {
			if rec != nil {
				if err := readClaimKey(br, rec); err != nil {
					return err
				}
			}
			if old := o.Replace; old != nil {
				var one int
				err := br.QueryRow().Scan(&one)
				if refusedWith(err, codeStale) {
					return fmt.Errorf("replace agent %q at version %d: %w", old.ID, old.Version, store.ErrConflict)
				}
				if err != nil {
					return mapErr(err, fmt.Sprintf("replace agent %q", old.ID))
				}
			}
			if _, err := br.Exec(); err != nil {
				return mapErr(err, what)
			}
			if link {
				tag, err := br.Exec()
				if err != nil {
					return mapErr(err, fmt.Sprintf("link provider %q to project %q", n.BrokerID, n.ProjectID))
				}
				linked = tag.RowsAffected() == 1
			}
			if reserveLimit == nil {
				return nil
			}
			return readReserve(br, n.BrokerID, n.ID, *reserveLimit)
		}()
		// Close reports the commit: a batch's implicit transaction
		// commits at its Sync, after the last statement.
		if cerr := br.Close(); err == nil && cerr != nil {
			err = mapErr(cerr, what)
		}
		if err != nil {
			return false, err
		}
	}
	*a = n
	return linked, nil
}

// replaceAgentSQL deletes the agent a create replaces (with its agent
// tokens; its reservation goes by cascade) if it is still at the version
// the Hub decided on, or refuses (codeStale), which aborts the batch.
const replaceAgentSQL = `WITH a AS (DELETE FROM agents WHERE id = $1 AND version = $2 RETURNING id),
		t AS (DELETE FROM tokens WHERE kind = $3 AND agent_id IN (SELECT id FROM a))
	SELECT CASE WHEN EXISTS (SELECT 1 FROM a) THEN 1
		ELSE scion_refuse('` + codeStale + `', 'the agent to replace has changed') END`

// linkProviderSQL is LinkProvider's statement, for a create's batch.
const linkProviderSQL = `INSERT INTO project_providers (project_id, broker_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

// GetAgent looks up by ID.
func (s *Store) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE id = $1`, id))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("agent %q", id))
	}
	return a, nil
}

// GetAgentBySlug looks up by project and slug.
func (s *Store) GetAgentBySlug(ctx context.Context, projectID, slug string) (*store.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE project_id = $1 AND slug = $2`, projectID, slug))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("agent %q in project %q", slug, projectID))
	}
	return a, nil
}

// ListAgents lists the agents matching f in ID order.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter, page store.Page) ([]*store.Agent, string, int, error) {
	var fs []filter
	if f.ProjectID != "" {
		fs = append(fs, filter{"project_id", f.ProjectID})
	}
	if f.BrokerID != "" {
		fs = append(fs, filter{"broker_id", f.BrokerID})
	}
	if f.Phase != "" {
		fs = append(fs, filter{"phase", f.Phase})
	}
	items, next, total, err := list(ctx, s, "agents", agentCols, fs, page, scanAgent,
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
	args := append(fields, now, a.ID, a.Version)
	tag, err := s.pool.Exec(ctx, updateAgentSQL, args...)
	if err != nil {
		return mapErr(err, what)
	}
	if tag.RowsAffected() == 0 {
		// Tell a stale copy from a deleted agent. The answer can race with
		// a concurrent delete, but either error is then true.
		var v int64
		if err := s.pool.QueryRow(ctx, `SELECT version FROM agents WHERE id = $1`, a.ID).Scan(&v); err != nil {
			return mapErr(err, what)
		}
		return fmt.Errorf("%s: version %d, stored %d: %w", what, a.Version, v, store.ErrConflict)
	}
	a.Version++
	a.UpdatedAt = now
	a.Generations = gens
	return nil
}

// DeleteAgent deletes the agent, its reservation (by cascade) and its
// agent tokens, which must not outlive it, in one statement.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	what := fmt.Sprintf("delete agent %q", id)
	var n int
	err := s.pool.QueryRow(ctx, `WITH a AS (DELETE FROM agents WHERE id = $1 RETURNING id),
		t AS (DELETE FROM tokens WHERE kind = $2 AND agent_id IN (SELECT id FROM a))
		SELECT count(*) FROM a`, id, store.TokenAgent).Scan(&n)
	if err != nil {
		return mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return nil
}
