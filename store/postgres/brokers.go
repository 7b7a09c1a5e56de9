package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const brokerCols = `id, name, status, version, protocol_version, runtime, capabilities, profiles, settings,
	auto_provide, secret, created_by, last_seen, created_at, updated_at`

func scanBroker(row pgx.Row) (*store.Broker, error) {
	var b store.Broker
	var caps, profiles, settings []byte
	var lastSeen *time.Time
	if err := row.Scan(&b.ID, &b.Name, &b.Status, &b.Version, &b.ProtocolVersion, &b.Runtime, &caps, &profiles, &settings,
		&b.AutoProvide, &b.Secret, &b.CreatedBy, &lastSeen, &b.CreatedAt, &b.UpdatedAt); err != nil {
		return nil, err
	}
	if err := dbutil.UnJSON(caps, &b.Capabilities); err != nil {
		return nil, fmt.Errorf("broker %s capabilities: %w", b.ID, err)
	}
	if err := dbutil.UnJSON(profiles, &b.Profiles); err != nil {
		return nil, fmt.Errorf("broker %s profiles: %w", b.ID, err)
	}
	if err := dbutil.UnJSON(settings, &b.Settings); err != nil {
		return nil, fmt.Errorf("broker %s settings: %w", b.ID, err)
	}
	b.LastSeen = fromNullTime(lastSeen)
	b.CreatedAt, b.UpdatedAt = utc(b.CreatedAt), utc(b.UpdatedAt)
	return &b, nil
}

// brokerJSON encodes a broker's JSON columns.
func brokerJSON(b *store.Broker) (caps, profiles, settings []byte, err error) {
	if caps, err = dbutil.JSON(b.Capabilities); err != nil {
		return
	}
	if profiles, err = dbutil.JSON(b.Profiles); err != nil {
		return
	}
	settings, err = dbutil.JSON(b.Settings)
	return
}

// CreateBroker inserts b, filling in ID and times when zero.
func (s *Store) CreateBroker(ctx context.Context, b *store.Broker) error {
	return insertBroker(ctx, s.pool, b)
}

// execer is the pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertBroker is CreateBroker on db (the pool, or a transaction).
func insertBroker(ctx context.Context, db execer, b *store.Broker) error {
	n := *b
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
	n.LastSeen = dbutil.Time(n.LastSeen)
	caps, profiles, settings, err := brokerJSON(&n)
	if err != nil {
		return fmt.Errorf("create broker %q: %w", n.Name, err)
	}
	_, err = db.Exec(ctx, `INSERT INTO runtime_brokers (`+brokerCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		n.ID, n.Name, n.Status, n.Version, n.ProtocolVersion, n.Runtime, jsonArg(caps), jsonArg(profiles), jsonArg(settings),
		n.AutoProvide, bytesArg(n.Secret), n.CreatedBy, nullTime(n.LastSeen), n.CreatedAt, n.UpdatedAt)
	if err != nil {
		return mapErr(err, fmt.Sprintf("create broker %q", n.Name))
	}
	*b = n
	return nil
}

// JoinBroker consumes the join token and inserts the broker build makes
// of it in one transaction: a failed insert (a taken name) or a refusal
// from build rolls the consumption back. A racing second join with the
// same token waits for the first's row lock and then finds it used.
func (s *Store) JoinBroker(ctx context.Context, hash []byte, now time.Time, build func(*store.JoinToken) (*store.Broker, error)) (*store.Broker, error) {
	var out *store.Broker
	err := s.tx(ctx, func(tx pgx.Tx) error {
		t, err := consumeJoinToken(ctx, tx, hash, now)
		if err != nil {
			return err
		}
		b, err := build(t)
		if err != nil {
			return err
		}
		if err := insertBroker(ctx, tx, b); err != nil {
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
	b, err := scanBroker(s.pool.QueryRow(ctx, `SELECT `+brokerCols+` FROM runtime_brokers
		WHERE id = $1 OR name = $1 ORDER BY id <> $1 LIMIT 1`, idOrName))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("broker %q", idOrName))
	}
	return b, nil
}

// GetBrokerForProject reads a broker and whether it provides for
// projectID in one statement.
func (s *Store) GetBrokerForProject(ctx context.Context, idOrName, projectID string) (*store.Broker, bool, error) {
	var provides bool
	row := s.pool.QueryRow(ctx, `SELECT `+brokerCols+`, EXISTS (SELECT 1 FROM project_providers
		WHERE project_id = $2 AND broker_id = runtime_brokers.id) FROM runtime_brokers
		WHERE id = $1 OR name = $1 ORDER BY id <> $1 LIMIT 1`, idOrName, projectID)
	b, err := scanBroker(dbutil.WithExtra{Row: row, Extra: []any{&provides}})
	if err != nil {
		return nil, false, mapErr(err, fmt.Sprintf("broker %q", idOrName))
	}
	return b, provides, nil
}

// ListBrokers lists brokers in ID order.
func (s *Store) ListBrokers(ctx context.Context, page store.Page) ([]*store.Broker, string, int, error) {
	items, next, total, err := list(ctx, s, "runtime_brokers", brokerCols, nil, page, scanBroker,
		func(b *store.Broker) string { return b.ID })
	if err != nil {
		return nil, "", 0, mapErr(err, "list brokers")
	}
	return items, next, total, nil
}

// UpdateBroker writes every field but ID and CreatedAt and sets
// b.UpdatedAt to now.
func (s *Store) UpdateBroker(ctx context.Context, b *store.Broker) error {
	caps, profiles, settings, err := brokerJSON(b)
	if err != nil {
		return fmt.Errorf("update broker %q: %w", b.ID, err)
	}
	now := dbutil.Now()
	lastSeen := dbutil.Time(b.LastSeen)
	tag, err := s.pool.Exec(ctx, `UPDATE runtime_brokers SET name = $1, status = $2, version = $3, protocol_version = $4,
		runtime = $5, capabilities = $6, profiles = $7, settings = $8, auto_provide = $9, secret = $10, created_by = $11,
		last_seen = $12, updated_at = $13 WHERE id = $14`,
		b.Name, b.Status, b.Version, b.ProtocolVersion, b.Runtime, jsonArg(caps), jsonArg(profiles), jsonArg(settings),
		b.AutoProvide, bytesArg(b.Secret), b.CreatedBy, nullTime(lastSeen), now, b.ID)
	if err := mustAffect(tag, err, fmt.Sprintf("update broker %q", b.ID)); err != nil {
		return err
	}
	b.LastSeen, b.UpdatedAt = lastSeen, now
	return nil
}

// SetBrokerStatus changes only status and last-seen time (not UpdatedAt:
// heartbeats are not edits).
func (s *Store) SetBrokerStatus(ctx context.Context, id, status string, lastSeen time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runtime_brokers SET status = $1, last_seen = $2 WHERE id = $3`,
		status, nullTime(dbutil.Time(lastSeen)), id)
	return mustAffect(tag, err, fmt.Sprintf("set status of broker %q", id))
}

// DeleteBroker deletes the broker; foreign keys cascade to its provider
// links and queued dispatches, and projects that had it as their default
// lose that default. Without force it refuses (ErrConflict) while an agent
// is assigned to the broker or holds a slot on it: the DELETE takes the
// broker's row lock first, so a reservation being taken concurrently (it
// locks that row too) is either committed and seen by the check, or finds
// the broker gone. Agents keep their BrokerID and their reservations.
func (s *Store) DeleteBroker(ctx context.Context, id string, force bool) error {
	what := fmt.Sprintf("delete broker %q", id)
	return s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM runtime_brokers WHERE id = $1`, id)
		if err := mustAffect(tag, err, what); err != nil {
			return err
		}
		if !force {
			var busy bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE broker_id = $1)
				OR EXISTS (SELECT 1 FROM reservations WHERE broker_id = $1)`, id).Scan(&busy); err != nil {
				return mapErr(err, what)
			}
			if busy {
				return fmt.Errorf("%s: it still has agents: %w", what, store.ErrConflict)
			}
		}
		_, err = tx.Exec(ctx, `UPDATE projects SET default_broker_id = '', updated_at = $1 WHERE default_broker_id = $2`,
			dbutil.Now(), id)
		return mapErr(err, what)
	})
}
