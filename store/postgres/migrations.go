package postgres

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the pg_advisory_xact_lock key that serialises schema
// changes between Hub processes opening the same database at once
// (CREATE TABLE IF NOT EXISTS alone is not safe under concurrency).
const migrationLock int64 = 0x5c10_5707_0001

// migrate applies pending migrations (migrate.Apply), every transaction
// under the advisory lock.
func (d *dialect) migrate(ctx context.Context) error {
	return migrate.Apply(ctx, migrate.Engine{Name: "postgres",
		Prepare: func(ctx context.Context) (have int, err error) {
			err = d.locked(ctx, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
					return err
				}
				return tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have)
			})
			return have, err
		},
		InTx: func(ctx context.Context, fn func(migrate.Tx) error) error {
			return d.locked(ctx, func(tx pgx.Tx) error { return fn(migrationTx{tx}) })
		}}, migrationFS, "migrations")
}

// locked runs fn in a transaction that holds the migration lock.
// Transaction-scoped locks cannot leak on a pooled connection.
func (d *dialect) locked(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		return fn(tx)
	})
}

type migrationTx struct{ tx pgx.Tx }

func (t migrationTx) Applied(ctx context.Context, version int) (bool, error) {
	var done bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, version).Scan(&done)
	return done, err
}

// Run runs m with no arguments: pgx then uses the simple protocol, which
// runs a multi-statement script.
func (t migrationTx) Run(ctx context.Context, m migrate.Migration) error {
	if _, err := t.tx.Exec(ctx, m.SQL); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	return err
}
