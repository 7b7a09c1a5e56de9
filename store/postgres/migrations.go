package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the pg_advisory_xact_lock key that serialises schema
// changes between Hub processes opening the same database at once
// (CREATE TABLE IF NOT EXISTS alone is not safe under concurrency).
const migrationLock int64 = 0x5c10_5707_0001

// migrate applies pending migrations in order. Each runs in its own
// transaction together with its schema_migrations row, under the advisory
// lock, and re-checks whether another process applied it meanwhile.
// Transaction-scoped locks cannot leak on a pooled connection.
func (d *dialect) migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	var have int
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have)
	})
	if err != nil {
		return fmt.Errorf("postgres: schema_migrations: %w", err)
	}
	// A newer binary migrated this database; running old code against a
	// schema it does not know could corrupt data.
	if latest := migrate.Latest(ms); have > latest {
		return fmt.Errorf("postgres: database schema version %d is newer than this binary's %d", have, latest)
	}
	for _, m := range ms {
		if m.Version <= have {
			continue
		}
		err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
				return err
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&done); err != nil {
				return err
			}
			if done {
				return nil
			}
			// No arguments: pgx uses the simple protocol, which runs a
			// multi-statement script.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: migration %s: %w", m.Name, err)
		}
	}
	return nil
}
