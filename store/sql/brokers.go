package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const brokerCols = `id, name, status, version, protocol_version, runtime, capabilities, profiles, settings,
	auto_provide, secret, created_by, last_seen, runtime_target, created_at, updated_at, workspace_storage`

const selectBrokerSQL = `SELECT ` + brokerCols + ` FROM runtime_brokers WHERE id = $1 OR name = $1 ORDER BY id <> $1 LIMIT 1`

// scanBroker reads brokerCols and then extra.
func (s *Store) scanBroker(row Row, extra ...any) (*store.Broker, error) {
	var b store.Broker
	var caps, profiles, settings, target, storage []byte
	if err := row.Scan(append([]any{&b.ID, &b.Name, &b.Status, &b.Version, &b.ProtocolVersion, &b.Runtime, &caps,
		&profiles, &settings, &b.AutoProvide, &b.Secret, &b.CreatedBy, s.d.ScanTime(&b.LastSeen), &target,
		s.d.ScanTime(&b.CreatedAt), s.d.ScanTime(&b.UpdatedAt), &storage}, extra...)...); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		name string
		b    []byte
		v    any
	}{{"capabilities", caps, &b.Capabilities}, {"profiles", profiles, &b.Profiles}, {"settings", settings, &b.Settings},
		{"runtime target", target, &b.RuntimeTarget}, {"workspace storage", storage, &b.WorkspaceStorage}} {
		if err := dbutil.UnJSON(c.b, c.v); err != nil {
			return nil, fmt.Errorf("broker %s %s: %w", b.ID, c.name, err)
		}
	}
	return &b, nil
}

// brokerArgs encodes every column of b but id and created_at, in the
// order UPDATE and INSERT below name them.
func (s *Store) brokerArgs(b *store.Broker) ([]any, error) {
	var enc [5][]byte
	// A nil RuntimeTarget (a broker that is not flat) encodes as NULL, as
	// does a nil WorkspaceStorage (never reported).
	for i, v := range []any{b.Capabilities, b.Profiles, b.Settings, b.RuntimeTarget, b.WorkspaceStorage} {
		var err error
		if enc[i], err = dbutil.JSON(v); err != nil {
			return nil, err
		}
	}
	return []any{b.Name, b.Status, b.Version, b.ProtocolVersion, b.Runtime, s.d.JSON(enc[0]), s.d.JSON(enc[1]),
		s.d.JSON(enc[2]), b.AutoProvide, b.Secret, b.CreatedBy, s.nullTime(b.LastSeen), s.d.JSON(enc[3]),
		s.d.Time(b.UpdatedAt), s.d.JSON(enc[4])}, nil
}

// CreateBroker inserts b, filling in ID and times when zero.
func (s *Store) CreateBroker(ctx context.Context, b *store.Broker) error {
	return s.insertBroker(ctx, s.w, b)
}

// insertBroker is CreateBroker on q (the writer, or a transaction).
func (s *Store) insertBroker(ctx context.Context, q Querier, b *store.Broker) error {
	n := *b
	stamp(&n.ID, &n.CreatedAt, &n.UpdatedAt)
	n.LastSeen = dbutil.Time(n.LastSeen)
	what := fmt.Sprintf("create broker %q", n.Name)
	args, err := s.brokerArgs(&n)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_, err = q.Exec(ctx, `INSERT INTO runtime_brokers (name, status, version, protocol_version, runtime, capabilities,
		profiles, settings, auto_provide, secret, created_by, last_seen, runtime_target, updated_at, workspace_storage, id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		append(args, n.ID, s.d.Time(n.CreatedAt))...)
	if err != nil {
		return s.mapErr(err, what)
	}
	*b = n
	return nil
}

// JoinBroker consumes the join token and inserts the broker build makes
// of it in one transaction: a failed insert (a taken name) or a refusal
// from build rolls the consumption back. A racing second join with the
// same token waits for the first's row lock (or the single writer) and
// then finds it used.
func (s *Store) JoinBroker(ctx context.Context, hash []byte, now time.Time, build func(*store.JoinToken) (*store.Broker, error)) (*store.Broker, error) {
	var out *store.Broker
	err := s.d.Tx(ctx, func(tx Querier) error {
		t, err := s.consumeJoinToken(ctx, tx, hash, now)
		if err != nil {
			return err
		}
		b, err := build(t)
		if err != nil {
			return err
		}
		if err := s.insertBroker(ctx, tx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetBroker looks up by ID, then by name.
func (s *Store) GetBroker(ctx context.Context, idOrName string) (*store.Broker, error) {
	b, err := s.scanBroker(s.r.QueryRow(ctx, selectBrokerSQL, idOrName))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("broker %q", idOrName))
	}
	return b, nil
}

// GetBrokerForProject reads a broker and whether it provides for
// projectID in one statement.
func (s *Store) GetBrokerForProject(ctx context.Context, idOrName, projectID string) (*store.Broker, bool, error) {
	var provides bool
	b, err := s.scanBroker(s.r.QueryRow(ctx, `SELECT `+brokerCols+`, EXISTS (SELECT 1 FROM project_providers
		WHERE project_id = $2 AND broker_id = runtime_brokers.id) FROM runtime_brokers
		WHERE id = $1 OR name = $1 ORDER BY id <> $1 LIMIT 1`, idOrName, projectID), &provides)
	if err != nil {
		return nil, false, s.mapErr(err, fmt.Sprintf("broker %q", idOrName))
	}
	return b, provides, nil
}

// ListBrokers lists brokers in ID order.
func (s *Store) ListBrokers(ctx context.Context, page store.Page) ([]*store.Broker, string, int, error) {
	return list(ctx, s, "list brokers", "runtime_brokers", brokerCols, nil, page,
		func(r Row) (*store.Broker, error) { return s.scanBroker(r) }, func(b *store.Broker) string { return b.ID })
}

// UpdateBroker writes every field but ID and CreatedAt and sets
// b.UpdatedAt to now.
func (s *Store) UpdateBroker(ctx context.Context, b *store.Broker) error {
	return s.updateBroker(ctx, s.w, b)
}

// UpdateBrokerWith reads the broker, locked, lets fn change it and writes
// it back, in one transaction: the row lock (PostgreSQL) or the single
// writer (SQLite) keeps another read-modify-write of the broker (an
// admin's PATCH, a hello) from writing back what it read before this one.
func (s *Store) UpdateBrokerWith(ctx context.Context, id string, fn func(*store.Broker) error) (*store.Broker, error) {
	var out *store.Broker
	err := s.d.Tx(ctx, func(tx Querier) error {
		b, err := s.scanBroker(tx.QueryRow(ctx, `SELECT `+brokerCols+` FROM runtime_brokers WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return s.mapErr(err, fmt.Sprintf("broker %q", id))
		}
		if err := fn(b); err != nil {
			return err
		}
		b.ID = id // fn may not move the record
		if err := s.updateBroker(ctx, tx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// updateBroker is UpdateBroker on q (the writer, or a transaction).
func (s *Store) updateBroker(ctx context.Context, q Querier, b *store.Broker) error {
	n := *b
	n.UpdatedAt, n.LastSeen = dbutil.Now(), dbutil.Time(b.LastSeen)
	what := fmt.Sprintf("update broker %q", b.ID)
	args, err := s.brokerArgs(&n)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	rows, err := q.Exec(ctx, `UPDATE runtime_brokers SET name = $1, status = $2, version = $3, protocol_version = $4,
		runtime = $5, capabilities = $6, profiles = $7, settings = $8, auto_provide = $9, secret = $10, created_by = $11,
		last_seen = $12, runtime_target = $13, updated_at = $14, workspace_storage = $15 WHERE id = $16`, append(args, b.ID)...)
	if err := s.mustAffect(rows, err, what); err != nil {
		return err
	}
	b.LastSeen, b.UpdatedAt = n.LastSeen, n.UpdatedAt
	return nil
}

// SetBrokerStatus changes only status and last-seen time (not UpdatedAt:
// heartbeats are not edits).
func (s *Store) SetBrokerStatus(ctx context.Context, id, status string, lastSeen time.Time) error {
	n, err := s.w.Exec(ctx, `UPDATE runtime_brokers SET status = $1, last_seen = $2 WHERE id = $3`,
		status, s.nullTime(dbutil.Time(lastSeen)), id)
	return s.mustAffect(n, err, fmt.Sprintf("set status of broker %q", id))
}

// DeleteBroker deletes the broker; foreign keys cascade to its provider
// links, queued dispatches, nonces and broker secrets, and projects that had it as their default
// lose that default. Without force it refuses (ErrConflict) while an agent
// is assigned to the broker or holds a slot on it: the DELETE takes the
// broker's row lock first and checks after it, in a later statement, so
// a reservation or a create being taken concurrently (each locks that row
// too, or on SQLite is serialised with it) is either committed and seen by
// the check, or finds the broker gone. Agents keep their BrokerID and their reservations.
func (s *Store) DeleteBroker(ctx context.Context, id string, force bool) error {
	what := fmt.Sprintf("delete broker %q", id)
	return s.d.Tx(ctx, func(tx Querier) error {
		n, err := tx.Exec(ctx, `DELETE FROM runtime_brokers WHERE id = $1`, id)
		if err := s.mustAffect(n, err, what); err != nil {
			return err
		}
		if !force {
			var busy bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE broker_id = $1)
				OR EXISTS (SELECT 1 FROM reservations WHERE broker_id = $1)`, id).Scan(&busy); err != nil {
				return s.mapErr(err, what)
			}
			if busy {
				return fmt.Errorf("%s: it still has agents: %w", what, store.ErrConflict)
			}
		}
		_, err = tx.Exec(ctx, `UPDATE projects SET default_broker_id = '', updated_at = $1 WHERE default_broker_id = $2`,
			s.d.Time(dbutil.Now()), id)
		return s.mapErr(err, what)
	})
}
