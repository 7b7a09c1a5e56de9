package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"time"

	"github.com/scion-go/scion/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies pending migrations (migrate.Apply). Every statement runs
// in a write transaction, not autocommit: an autocommit CREATE reads the
// schema first and then upgrades its lock, and SQLite refuses that upgrade
// at once (SQLITE_BUSY, no busy wait) while another process opening the
// same file is writing. BEGIN IMMEDIATE takes the write lock up front,
// where the busy timeout applies, and serialises concurrent Opens of one
// file (even from other processes).
func (d *dialect) migrate(ctx context.Context) error {
	return migrate.Apply(ctx, migrate.Engine{Name: "sqlite",
		Prepare: func(ctx context.Context) (int, error) {
			var have sql.NullInt64
			err := d.write(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
					return err
				}
				return tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&have)
			})
			return int(have.Int64), err
		},
		InTx: func(ctx context.Context, fn func(migrate.Tx) error) error {
			return d.write(ctx, func(tx *sql.Tx) error { return fn(migrationTx{tx}) })
		}}, migrationFS, "migrations")
}

type migrationTx struct{ tx *sql.Tx }

func (t migrationTx) Applied(ctx context.Context, version int) (bool, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n)
	return n > 0, err
}

func (t migrationTx) Run(ctx context.Context, m migrate.Migration) error {
	if _, err := t.tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMicro())
	return err
}

// write runs fn in a write transaction on the raw connection.
func (d *dialect) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
