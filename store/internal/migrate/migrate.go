// Package migrate loads a store's versioned SQL migrations from an embedded
// file system. Each engine applies them itself (the locking differs); this
// package only fixes the naming rule and the order.
//
// A migration file is named NNNN_description.sql; NNNN is its version. Files
// are applied in version order and recorded in schema_migrations, so a
// released migration must never be edited: add a new one instead.
package migrate

import (
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
