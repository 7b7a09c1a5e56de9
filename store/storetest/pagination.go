package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/scion-go/scion/store"
)

// pageThrough follows cursors from the first page, checking every page's
// size and total, and returns the IDs seen in order.
func pageThrough(t *testing.T, limit, wantTotal int, wantSizes []int,
	list func(store.Page) ([]string, string, int, error)) []string {
	t.Helper()
	var seen []string
	page := store.Page{Limit: limit}
	for i := 0; ; i++ {
		if i > len(wantSizes) {
			t.Fatalf("more than %d pages: cursors do not terminate", len(wantSizes))
		}
		items, next, total, err := list(page)
		must(t, err)
		if total != wantTotal {
			t.Fatalf("page %d: total %d, want %d", i, total, wantTotal)
		}
		if i < len(wantSizes) && len(items) != wantSizes[i] {
			t.Fatalf("page %d: %d items, want %d", i, len(items), wantSizes[i])
		}
		seen = append(seen, items...)
		if next == "" {
			if i != len(wantSizes)-1 {
				t.Fatalf("no cursor after page %d, want %d pages", i, len(wantSizes))
			}
			return seen
		}
		page.Cursor = next
	}
}

func listProjectIDs(s store.Store, t *testing.T) func(store.Page) ([]string, string, int, error) {
	return func(p store.Page) ([]string, string, int, error) {
		items, next, total, err := s.ListProjects(t.Context(), p)
		return ids(items, func(p *store.Project) string { return p.ID }), next, total, err
	}
}

func testPagination(t *testing.T, s store.Store) {
	ctx := t.Context()
	var want []string
	for i := range 250 {
		want = append(want, newProject(t, s, fmt.Sprintf("proj-%03d", i)).ID)
	}
	// UUIDv7 IDs: creation order is ID order.
	if !slices.IsSorted(want) {
		t.Fatal("generated IDs are not increasing")
	}

	got := pageThrough(t, 100, 250, []int{100, 100, 50}, listProjectIDs(s, t))
	equal(t, got, want)

	// Limit 0 is the default of 100; the same walk with it.
	got = pageThrough(t, 0, 250, []int{100, 100, 50}, listProjectIDs(s, t))
	equal(t, got, want)

	// Ending exactly on a page boundary hands out no cursor to an empty page.
	got = pageThrough(t, 125, 250, []int{125, 125}, listProjectIDs(s, t))
	equal(t, got, want)

	// A cursor no list returned is an error, not a silent first page.
	for _, c := range []string{"%%% not a cursor", "garbage"} {
		if _, _, _, err := s.ListProjects(ctx, store.Page{Cursor: c}); !errors.Is(err, store.ErrBadCursor) {
			t.Fatalf("ListProjects with cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}

func testPaginationAgents(t *testing.T, s store.Store) {
	ctx := t.Context()
	p, other := newProject(t, s, "p"), newProject(t, s, "other")
	var want []string
	for i := range 250 {
		want = append(want, newAgent(t, s, p.ID, slug(i), "").ID)
		if i%10 == 0 {
			newAgent(t, s, other.ID, slug(i), "")
		}
	}
	got := pageThrough(t, 100, 250, []int{100, 100, 50}, func(pg store.Page) ([]string, string, int, error) {
		items, next, total, err := s.ListAgents(ctx, store.AgentFilter{ProjectID: p.ID}, pg)
		return agentIDs(items), next, total, err
	})
	equal(t, got, want)

	_, _, total, err := s.ListAgents(ctx, store.AgentFilter{}, store.Page{Limit: 1})
	must(t, err)
	if total != 275 {
		t.Fatalf("unfiltered total %d, want 275", total)
	}
}

// testPaginationWhileWriting deletes and inserts between pages: the walk
// still ends, sees nothing twice, misses nothing that existed throughout,
// and sees what was added after its position.
func testPaginationWhileWriting(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := newProject(t, s, "p")
	var all []string
	for i := range 30 {
		all = append(all, newAgent(t, s, p.ID, slug(i), "").ID)
	}
	f := store.AgentFilter{ProjectID: p.ID}
	var seen []string
	page := store.Page{Limit: 10}
	deleted := map[string]bool{}
	var added []string
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("pagination does not terminate")
		}
		items, next, _, err := s.ListAgents(ctx, f, page)
		must(t, err)
		seen = append(seen, agentIDs(items)...)
		if next == "" {
			break
		}
		page.Cursor = next
		if i == 0 {
			// Delete the last item seen (the cursor's own row) and one
			// not yet seen, and add a new one.
			for _, id := range []string{all[9], all[15]} {
				must(t, s.DeleteAgent(ctx, id))
				deleted[id] = true
			}
			added = append(added, newAgent(t, s, p.ID, "late", "").ID)
		}
	}
	want := []string{}
	for _, id := range all {
		if !deleted[id] || id == all[9] { // all[9] was seen before its deletion
			want = append(want, id)
		}
	}
	want = append(want, added...)
	equal(t, seen, want)
}

// testPaginationLimits checks the cap: a limit above 1000 returns 1000.
func testPaginationLimits(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i := range 1001 {
		newProject(t, s, fmt.Sprintf("proj-%04d", i))
	}
	items, next, total, err := s.ListProjects(ctx, store.Page{Limit: 5000})
	must(t, err)
	if len(items) != 1000 || next == "" || total != 1001 {
		t.Fatalf("Limit 5000: %d items, next %q, total %d; want 1000 items capped, a cursor, total 1001", len(items), next, total)
	}
	rest, next, _, err := s.ListProjects(ctx, store.Page{Limit: 5000, Cursor: next})
	must(t, err)
	if len(rest) != 1 || next != "" {
		t.Fatalf("second page: %d items, next %q", len(rest), next)
	}
	items, _, _, err = s.ListProjects(ctx, store.Page{Limit: -1})
	must(t, err)
	if len(items) != 100 {
		t.Fatalf("Limit -1: %d items, want the default 100", len(items))
	}
}
