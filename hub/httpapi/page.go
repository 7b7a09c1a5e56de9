package httpapi

import (
	"net/http"
	"strconv"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// PageFrom reads a list request's ?limit= and ?cursor=.
func PageFrom(r *http.Request) (store.Page, error) {
	p := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return p, api.BadRequest("limit must be an integer from 1 to 1000")
		}
		p.Limit = n
	}
	if len(p.Cursor) > 256 {
		return p, api.BadRequest("cursor too long")
	}
	// Refused here rather than by the store: a cursor the Hub never handed
	// out is the caller's mistake (400), not an internal error.
	if _, err := store.DecodeCursor(p.Cursor); err != nil {
		return p, api.BadRequest("invalid cursor %s: pass the nextCursor of the previous page, or none for the first", api.Quote(p.Cursor))
	}
	return p, nil
}
