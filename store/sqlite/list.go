package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// list returns one page of table, in ID order, and the size of the whole
// filtered set. where is a condition on the filter columns ("" for none)
// with args for its placeholders.
//
// Keyset pagination: the cursor is the last ID returned and the next page
// is "id > cursor", so a client following cursors sees each row once and
// terminates even while rows are inserted or deleted. One extra row is
// fetched to learn whether there is a next page, so the last page never
// hands out a cursor to an empty page.
func list[T any](ctx context.Context, s *Store, table, cols, where string, args []any, page store.Page,
	scan func(scanner) (T, error), id func(T) string) ([]T, string, int, error) {
	after, err := dbutil.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", 0, err
	}
	limit := dbutil.Limit(page)

	var conds []string
	if where != "" {
		conds = append(conds, where)
	}
	countQuery := `SELECT count(*) FROM ` + table
	if len(conds) > 0 {
		countQuery += ` WHERE ` + strings.Join(conds, " AND ")
	}
	pageArgs := append([]any(nil), args...)
	if after != "" {
		conds = append(conds, "id > ?")
		pageArgs = append(pageArgs, after)
	}
	pageQuery := `SELECT ` + cols + ` FROM ` + table
	if len(conds) > 0 {
		pageQuery += ` WHERE ` + strings.Join(conds, " AND ")
	}
	pageQuery += ` ORDER BY id LIMIT ?`
	pageArgs = append(pageArgs, limit+1)

	items := make([]T, 0, min(limit, 64))
	var total int
	err = s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, pageQuery, pageArgs...)
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
		return tx.QueryRowContext(ctx, countQuery, args...).Scan(&total)
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
