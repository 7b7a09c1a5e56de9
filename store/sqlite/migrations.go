package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/scion-go/scion/store/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies pending migrations in order, each in its own write
// transaction together with its schema_migrations row. BEGIN IMMEDIATE
// serialises concurrent Opens of one file (even from other processes), and
// each transaction re-checks whether its version is already applied.
func (d *dialect) migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	// In a write transaction, not autocommit: an autocommit CREATE reads the
	// schema first and then upgrades its lock, and SQLite refuses that
	// upgrade at once (SQLITE_BUSY, no busy wait) while another process
	// opening the same file is writing. BEGIN IMMEDIATE takes the write
	// lock up front, where the busy timeout applies.
	if err := d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`)
		return err
	}); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	var have sql.NullInt64
	if err := d.w.db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("sqlite: read schema version: %w", err)
	}
	// A newer binary migrated this file; running old code against a schema
	// it does not know could corrupt data.
	if latest := migrate.Latest(ms); int(have.Int64) > latest {
		return fmt.Errorf("sqlite: database schema version %d is newer than this binary's %d", have.Int64, latest)
	}
	for _, m := range ms {
		err := d.write(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
		}
	}
	return nil
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
