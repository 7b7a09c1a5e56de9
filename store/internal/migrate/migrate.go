// Package migrate loads a store's versioned SQL migrations from an embedded
// file system and applies them (Apply); each engine supplies only its
// transactions, their locking and its schema_migrations statements.
//
// A migration file is named NNNN_description.sql; NNNN is its version. Files
// are applied in version order and recorded in schema_migrations, so a
// released migration must never be edited: add a new one instead.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one SQL file.
type Migration struct {
	Version int
	Name    string // file name
	SQL     string
}

// Load reads every *.sql file in dir of fsys, sorted by version. Duplicate
// or unparsable versions are errors: they would make the order ambiguous.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Latest is the highest version in ms (0 if none).
func Latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Tx is one migration's write transaction on an engine.
type Tx interface {
	// Applied reports whether version is recorded in schema_migrations.
	Applied(ctx context.Context, version int) (bool, error)
	// Run runs m's script and records m.
	Run(ctx context.Context, m Migration) error
}

// Engine is what Apply needs of a database.
type Engine struct {
	Name string // in errors: "sqlite", "postgres"
	// Prepare creates schema_migrations when missing and returns the
	// newest version recorded in it (0 for none).
	Prepare func(ctx context.Context) (int, error)
	// InTx runs fn in one write transaction that holds the engine's
	// migration lock (so concurrent Opens of one database apply each
	// migration once) and commits it when fn returns nil.
	InTx func(ctx context.Context, fn func(Tx) error) error
}

// Apply applies the migrations in dir of fsys that e has not recorded, in
// order, each in its own transaction together with its schema_migrations
// row; each transaction re-checks whether another process applied its
// version meanwhile. A database migrated by a newer binary is refused:
// running old code against a schema it does not know could corrupt data.
func Apply(ctx context.Context, e Engine, fsys fs.FS, dir string) error {
	ms, err := Load(fsys, dir)
	if err != nil {
		return fmt.Errorf("%s: %w", e.Name, err)
	}
	have, err := e.Prepare(ctx)
	if err != nil {
		return fmt.Errorf("%s: schema_migrations: %w", e.Name, err)
	}
	if latest := Latest(ms); have > latest {
		return fmt.Errorf("%s: database schema version %d is newer than this binary's %d", e.Name, have, latest)
	}
	for _, m := range ms {
		if m.Version <= have {
			continue
		}
		err := e.InTx(ctx, func(tx Tx) error {
			done, err := tx.Applied(ctx, m.Version)
			if err != nil || done {
				return err
			}
			return tx.Run(ctx, m)
		})
		if err != nil {
			return fmt.Errorf("%s: migration %s: %w", e.Name, m.Name, err)
		}
	}
	return nil
}
