package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// filter is one "column = value" condition of a list.
type filter struct {
	col string
	val any
}

// list returns one page of table, in ID order, and the size of the whole
// filtered set, both read from one REPEATABLE READ snapshot.
//
// Keyset pagination: the cursor is the last ID returned and the next page
// is "id > cursor", so a client following cursors sees each row once and
// terminates even while rows are inserted or deleted. One extra row is
// fetched to learn whether there is a next page, so the last page never
// hands out a cursor to an empty page.
func list[T any](ctx context.Context, s *Store, table, cols string, filters []filter, page store.Page,
	scan func(pgx.Row) (T, error), id func(T) string) ([]T, string, int, error) {
	after, err := dbutil.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	limit := dbutil.Limit(page)

	var conds []string
	var args []any
	for _, f := range filters {
		args = append(args, f.val)
		conds = append(conds, fmt.Sprintf("%s = $%d", f.col, len(args)))
	}
	countQuery := `SELECT count(*) FROM ` + table
	if len(conds) > 0 {
		countQuery += ` WHERE ` + strings.Join(conds, " AND ")
	}
	pageArgs := append([]any(nil), args...)
	if after != "" {
		pageArgs = append(pageArgs, after)
		conds = append(conds, fmt.Sprintf("id > $%d", len(pageArgs)))
	}
	pageQuery := `SELECT ` + cols + ` FROM ` + table
	if len(conds) > 0 {
		pageQuery += ` WHERE ` + strings.Join(conds, " AND ")
	}
	pageArgs = append(pageArgs, limit+1)
	pageQuery += fmt.Sprintf(` ORDER BY id LIMIT $%d`, len(pageArgs))

	items := make([]T, 0, min(limit, 64))
	var total int
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, pageQuery, pageArgs...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				it, err := scan(rows)
				if err != nil {
					return err
				}
				items = append(items, it)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			return tx.QueryRow(ctx, countQuery, args...).Scan(&total)
		})
	if err != nil {
		return nil, "", 0, err
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		next = dbutil.EncodeCursor(id(items[limit-1]))
	}
	return items, next, total, nil
}
