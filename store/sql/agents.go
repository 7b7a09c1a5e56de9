package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const agentCols = `id, slug, project_id, broker_id, profile, harness, image, command, env, phase, status_message,
	container_status, run_id, generation, generations, role, created_by, delegator, parent_agent_id, payload,
	ports, port_mappings, scopes, delegation_chain, passthrough, secret_names, workspace_placement, version, created_at,
	updated_at, pinned_runtime_target`

// agentReadCols are the columns scanAgent reads: agentCols and the token
// generation, which only RenewAgentToken writes (inserts take the
// columns' defaults, updates never name them).
const agentReadCols = agentCols + `, token_generation, token_renewed_at`

// InsertAgentSQL inserts an agent (AgentCreate.Args). It is the only
// statement that writes pinned_runtime_target: the pin is read-only after
// the create, so neither update statement below names it.
const InsertAgentSQL = `INSERT INTO agents (` + agentCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
	$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31)`

// UpdateAgentSQL writes everything but id and created_at, only if the
// version still matches ($28 id, $29 expected version). Its arguments are
// AgentUpdate.Args.
const UpdateAgentSQL = `UPDATE agents SET slug = $1, project_id = $2, broker_id = $3, profile = $4, harness = $5,
	image = $6, command = $7, env = $8, phase = $9, status_message = $10, container_status = $11, run_id = $12,
	generation = $13, generations = $14, role = $15, created_by = $16, delegator = $17, parent_agent_id = $18,
	payload = $19, ports = $20, port_mappings = $21, scopes = $22, delegation_chain = $23, passthrough = $24,
	secret_names = $25, workspace_placement = $26, version = version + 1, updated_at = $27
	WHERE id = $28 AND version = $29`

// InsertAgentOnBrokerSQL is InsertAgentSQL inserting nothing when the
// agent's broker ($4) does not exist. Alone it is safe only where writes
// are serialised (SQLite): the check then holds until the insert commits;
// where they run concurrently a deletion of the broker can commit between
// the two, and the dialect must lock the broker's row instead.
const InsertAgentOnBrokerSQL = `INSERT INTO agents (` + agentCols + `) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
	$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31
	WHERE EXISTS (SELECT 1 FROM runtime_brokers WHERE id = $4)`

// BrokerGone is the error for a create whose broker does not exist.
func BrokerGone(brokerID, what string) error {
	return fmt.Errorf("broker %q of %s: no such broker: %w", brokerID, what, store.ErrNotFound)
}

// LinkProviderSQL links a broker ($2) to a project ($1); a link already
// there is kept (no row affected).
const LinkProviderSQL = `INSERT INTO project_providers (project_id, broker_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

func (s *Store) scanAgent(row Row) (*store.Agent, error) {
	var a store.Agent
	var cmd, env, gens, payload, ports, mappings, scopes, chain, secrets, pin []byte
	var renewed int64
	if err := row.Scan(&a.ID, &a.Slug, &a.ProjectID, &a.BrokerID, &a.Profile, &a.Harness, &a.Image, &cmd, &env,
		&a.Phase, &a.StatusMessage, &a.ContainerStatus, &a.RunID, &a.Generation, &gens, &a.Role, &a.CreatedBy,
		&a.Delegator, &a.ParentAgentID, &payload, &ports, &mappings, &scopes, &chain,
		&a.Passthrough, &secrets, &a.WorkspacePlacement, &a.Version, s.d.ScanTime(&a.CreatedAt), s.d.ScanTime(&a.UpdatedAt), &pin,
		&a.TokenGeneration, &renewed); err != nil {
		return nil, err
	}
	if renewed != 0 {
		a.TokenRenewedAt = time.Unix(renewed, 0).UTC()
	}
	for _, c := range []struct {
		name string
		b    []byte
		v    any
	}{
		{"command", cmd, &a.Command}, {"env", env, &a.Env}, {"generations", gens, &a.Generations},
		{"ports", ports, &a.Ports}, {"port mappings", mappings, &a.PortMappings}, {"scopes", scopes, &a.Scopes},
		{"delegation chain", chain, &a.DelegationChain}, {"secret names", secrets, &a.SecretNames},
		{"pinned runtime target", pin, &a.Pin},
	} {
		if err := dbutil.UnJSON(c.b, c.v); err != nil {
			return nil, fmt.Errorf("agent %s %s: %w", a.ID, c.name, err)
		}
	}
	if payload != nil {
		a.Payload = payload
	}
	return &a, nil
}

// agentFields encodes the columns UpdateAgent writes, in UpdateAgentSQL's
// order (InsertAgentSQL puts id first and version and times last).
func (s *Store) agentFields(a *store.Agent) ([]any, error) {
	payload, err := dbutil.Payload(a.Payload)
	if err != nil {
		return nil, err
	}
	var enc [8][]byte
	for i, c := range []struct {
		name string
		v    any
	}{
		{"command", a.Command}, {"env", a.Env}, {"generations", a.Generations}, {"ports", a.Ports},
		{"port mappings", a.PortMappings},
	} {
		if enc[i], err = dbutil.JSON(c.v); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	// String lists skip the reflection (agent writes are on the hot path).
	for i, l := range [][]string{a.Scopes, a.DelegationChain, a.SecretNames} {
		if enc[5+i], err = dbutil.Strings(l); err != nil {
			return nil, err
		}
	}
	j := s.d.JSON
	return []any{a.Slug, a.ProjectID, a.BrokerID, a.Profile, a.Harness, a.Image, j(enc[0]), j(enc[1]), a.Phase,
		a.StatusMessage, a.ContainerStatus, a.RunID, a.Generation, j(enc[2]), a.Role, a.CreatedBy, a.Delegator,
		a.ParentAgentID, j(payload), j(enc[3]), j(enc[4]), j(enc[5]), j(enc[6]), a.Passthrough, j(enc[7]),
		a.WorkspacePlacement}, nil
}

// AgentCreate is a create and what it writes with it, prepared by the
// Store for the dialect's AgentWrites, which runs, in one transaction and
// in this order:
// the key claim, the replaced agent's deletion (ErrConflict unless it is
// at Replace.Version), InsertAgentSQL with Args, LinkProviderSQL when
// Link, and the reservation when ReserveLimit is not nil; without it, a
// check that the agent's broker (when it names one) exists, under a lock
// that DeleteBroker's conflicts with where writes run concurrently. A
// broker that is gone is ErrNotFound (BrokerGone) and nothing is written.
type AgentCreate struct {
	Agent        *store.Agent // as it is inserted
	Args         []any
	Key          *store.IdempotencyRecord // nil: no key to claim
	KeyArgs      []any                    // ClaimKeySQL's arguments
	Replace      *store.Agent
	Link         bool
	ReserveLimit *int
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
	n := *a
	stamp(&n.ID, &n.CreatedAt, &n.UpdatedAt)
	if n.Version == 0 {
		n.Version = 1
	}
	n.Generations = dbutil.Generations(n.Generations)
	what := fmt.Sprintf("create agent %q in project %q", n.Slug, n.ProjectID)
	fields, err := s.agentFields(&n)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	// A nil pin (an agent not on a flat broker) encodes as NULL.
	pin, err := dbutil.JSON(n.Pin)
	if err != nil {
		return false, fmt.Errorf("%s: pinned runtime target: %w", what, err)
	}
	args := make([]any, 0, 30)
	args = append(args, n.ID)
	args = append(args, fields...)
	args = append(args, n.Version, s.d.Time(n.CreatedAt), s.d.Time(n.UpdatedAt), s.d.JSON(pin))

	c := &AgentCreate{Agent: &n, Args: args, Key: rec, Replace: o.Replace, Link: o.LinkProvider, ReserveLimit: o.ReserveLimit}
	if rec != nil {
		c.KeyArgs = s.claimArgs(rec, n.ID)
	}
	if o.ReserveLimit == nil && rec == nil && !o.LinkProvider && o.Replace == nil && n.BrokerID == "" {
		// A single statement commits on its own: no transaction needed.
		if _, err := s.w.Exec(ctx, InsertAgentSQL, args...); err != nil {
			return false, s.mapErr(err, what)
		}
	} else if linked, err = s.d.CreateAgent(ctx, c); err != nil {
		return false, err
	}
	*a = n
	return linked, nil
}

// ReplaceConflict is the error for a replaced agent that has changed.
func ReplaceConflict(old *store.Agent) error {
	return fmt.Errorf("replace agent %q at version %d: %w", old.ID, old.Version, store.ErrConflict)
}

// GetAgent looks up by ID.
func (s *Store) GetAgent(ctx context.Context, id string) (*store.Agent, error) {
	a, err := s.scanAgent(s.r.QueryRow(ctx, `SELECT `+agentReadCols+` FROM agents WHERE id = $1`, id))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("agent %q", id))
	}
	return a, nil
}

// GetAgentBySlug looks up by project and slug.
func (s *Store) GetAgentBySlug(ctx context.Context, projectID, slug string) (*store.Agent, error) {
	a, err := s.scanAgent(s.r.QueryRow(ctx, `SELECT `+agentReadCols+` FROM agents WHERE project_id = $1 AND slug = $2`, projectID, slug))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("agent %q in project %q", slug, projectID))
	}
	return a, nil
}

// ListAgents lists the agents matching f in ID order.
func (s *Store) ListAgents(ctx context.Context, f store.AgentFilter, page store.Page) ([]*store.Agent, string, int, error) {
	var fs []filter
	for _, c := range []filter{{col: "project_id", val: f.ProjectID}, {col: "broker_id", val: f.BrokerID}, {col: "phase", val: f.Phase}} {
		if c.val != "" {
			fs = append(fs, c)
		}
	}
	return list(ctx, s, "list agents", "agents", agentReadCols, fs, page, s.scanAgent, func(a *store.Agent) string { return a.ID })
}

// UpdateAgent writes a if a.Version is the stored version, then increments
// a.Version and sets a.UpdatedAt; ErrConflict if the stored version moved
// on, ErrNotFound if the agent is gone.
func (s *Store) UpdateAgent(ctx context.Context, a *store.Agent) error {
	return s.UpdateAgentWith(ctx, a, store.UpdateAgentOptions{})
}

// UpdateAgentWith writes a and, in the same transaction, what o asks
// for; see store.Store.
func (s *Store) UpdateAgentWith(ctx context.Context, a *store.Agent, o store.UpdateAgentOptions) error {
	u, err := s.agentUpdate(a)
	if err != nil {
		return err
	}
	u.ReserveLimit, u.MoveSlot, u.Release, u.Link = o.ReserveLimit, o.MoveReservation, o.ReleaseReservation, o.LinkProvider
	if u.MoveSlot && u.ReserveLimit == nil {
		return fmt.Errorf("%s: moving a reservation needs the limit of the broker it moves to", u.What)
	}
	if u.Release && u.ReserveLimit != nil {
		return fmt.Errorf("%s: a reservation is either released or taken", u.What)
	}
	updated, err := s.d.UpdateAgent(ctx, u)
	if err == nil && !updated {
		err = s.staleAgent(ctx, s.r, a, u.What)
	}
	if err != nil {
		return err
	}
	*a = *u.Agent
	return nil
}

// AgentUpdate is an agent's update and the reservation written with it,
// prepared by the Store for the dialect's AgentWrites, which runs in one
// transaction UpdateAgentSQL with Args (nothing written, updated false,
// if it matches no row), then, when ReserveLimit is not nil, the
// reservation of *ReserveLimit on the agent's broker at the agent's
// UpdatedAt. With MoveSlot, a slot the agent holds on another broker is
// released first (ReleaseOtherSlotSQL); with Release, its slot wherever
// it is (ReleaseSlotSQL), and no other taken; with Link, the agent's broker is
// linked to its project (LinkProviderSQL), both in that transaction.
type AgentUpdate struct {
	Agent        *store.Agent // as it is written
	Args         []any
	ReserveLimit *int
	MoveSlot     bool
	Release      bool
	Link         bool
	What         string // what the update is, for its errors
}

// ReleaseOtherSlotSQL releases agent $1's slot unless it is on broker $2:
// the first half of moving a reservation.
const ReleaseOtherSlotSQL = `DELETE FROM reservations WHERE agent_id = $1 AND broker_id <> $2`

// ReleaseSlotSQL releases agent $1's slot wherever it is held.
const ReleaseSlotSQL = `DELETE FROM reservations WHERE agent_id = $1`

// agentUpdate prepares a's update: the agent as written (version
// incremented, UpdatedAt now) and UpdateAgentSQL's arguments.
func (s *Store) agentUpdate(a *store.Agent) (*AgentUpdate, error) {
	what := fmt.Sprintf("update agent %q", a.ID)
	n := *a
	n.Generations = dbutil.Generations(a.Generations)
	fields, err := s.agentFields(&n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	n.UpdatedAt = dbutil.Now()
	n.Version = a.Version + 1
	return &AgentUpdate{Agent: &n, Args: append(fields, s.d.Time(n.UpdatedAt), a.ID, a.Version), What: what}, nil
}

// updateAgentIn writes a copy of a in q (a transaction of the caller's)
// if its version matches, and returns the copy as written.
func (s *Store) updateAgentIn(ctx context.Context, q Querier, a *store.Agent) (*store.Agent, error) {
	u, err := s.agentUpdate(a)
	if err != nil {
		return nil, err
	}
	rows, err := q.Exec(ctx, UpdateAgentSQL, u.Args...)
	if err != nil {
		return nil, s.mapErr(err, u.What)
	}
	if rows == 0 {
		return nil, s.staleAgent(ctx, q, a, u.What)
	}
	return u.Agent, nil
}

// staleAgent is the error for an update of a that matched no row: the
// stored version moved on (ErrConflict), or the agent is gone
// (ErrNotFound). The answer can race with a concurrent delete, but either
// error is then true.
func (s *Store) staleAgent(ctx context.Context, check Querier, a *store.Agent, what string) error {
	var v int64
	if err := check.QueryRow(ctx, `SELECT version FROM agents WHERE id = $1`, a.ID).Scan(&v); err != nil {
		return s.mapErr(err, what)
	}
	return fmt.Errorf("%s: version %d, stored %d: %w", what, a.Version, v, store.ErrConflict)
}

// DeleteAgent deletes the agent, its reservation (by cascade) and its
// agent tokens, which must not outlive it.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	ok, err := s.d.DeleteAgent(ctx, id)
	if err == nil && !ok {
		err = store.ErrNotFound
	}
	return s.mapErr(err, fmt.Sprintf("delete agent %q", id))
}

// RenewAgentToken moves the agent's token generation on by one if it is
// still at from; see store.Store. It leaves version and updated_at alone:
// a renewal is not a change of the agent that other writers must see.
func (s *Store) RenewAgentToken(ctx context.Context, id string, from int64, at time.Time) error {
	what := fmt.Sprintf("renew the token of agent %q", id)
	n, err := s.w.Exec(ctx, `UPDATE agents SET token_generation = token_generation + 1, token_renewed_at = $1
		WHERE id = $2 AND token_generation = $3`, at.Unix(), id, from)
	if err != nil {
		return s.mapErr(err, what)
	}
	if n == 1 {
		return nil
	}
	var g int64
	if err := s.r.QueryRow(ctx, `SELECT token_generation FROM agents WHERE id = $1`, id).Scan(&g); err != nil {
		return s.mapErr(err, what)
	}
	return fmt.Errorf("%s: generation %d, stored %d: %w", what, from, g, store.ErrConflict)
}
