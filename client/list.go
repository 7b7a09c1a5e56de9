package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/scion-go/scion/api"
)

// allPageSize is the page size the ListAll* helpers ask for; the Hub may
// cap it lower, which only costs more round trips.
const allPageSize = 100

// maxPages stops ListAll* on a server whose cursors never end (a known
// failure mode of list endpoints that ignore their cursor).
const maxPages = 100000

func pageQuery(cursor string, limit int) url.Values {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// listAll follows NextCursor from the first page to the last. It refuses a
// cursor it has already seen, since following it would loop forever.
func listAll[T any](ctx context.Context, page func(ctx context.Context, cursor string) (*api.List[T], error)) ([]T, error) {
	all := []T{}
	seen := map[string]bool{}
	cursor := ""
	for range maxPages {
		l, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, l.Items...)
		if l.NextCursor == "" {
			return all, nil
		}
		if seen[l.NextCursor] {
			return nil, fmt.Errorf("client: the Hub returned cursor %q twice; stopping instead of looping", l.NextCursor)
		}
		seen[l.NextCursor] = true
		cursor = l.NextCursor
	}
	return nil, fmt.Errorf("client: more than %d pages; stopping", maxPages)
}
