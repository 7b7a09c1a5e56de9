package migrate

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"
)

func TestLoadOrders(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0010_later.sql": {Data: []byte("B")},
		"m/0002_first.sql": {Data: []byte("A")},
		"m/README.md":      {Data: []byte("ignored")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Version != 2 || ms[0].SQL != "A" || ms[1].Version != 10 || ms[1].Name != "0010_later.sql" {
		t.Fatalf("Load = %+v", ms)
	}
	if Latest(ms) != 10 || Latest(nil) != 0 {
		t.Fatal("Latest wrong")
	}
}

func TestLoadRejects(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"duplicate version": {"m/0001_a.sql": {}, "m/1_b.sql": {}},
		"no version":        {"m/init.sql": {}},
		"zero version":      {"m/0000_a.sql": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load succeeded", name)
		}
	}
}

// engine is an in-memory migrate.Engine that records what Apply did.
type engine struct {
	recorded map[int]bool
	ran      []string
	// appliedMeanwhile: versions another process records between Prepare
	// and their transaction.
	appliedMeanwhile map[int]bool
}

func (e *engine) Engine() Engine {
	return Engine{Name: "test",
		Prepare: func(context.Context) (int, error) {
			have := 0
			for v := range e.recorded {
				have = max(have, v)
			}
			for v := range e.appliedMeanwhile {
				e.recorded[v] = true
			}
			return have, nil
		},
		InTx: func(_ context.Context, fn func(Tx) error) error { return fn(e) }}
}

func (e *engine) Applied(_ context.Context, v int) (bool, error) { return e.recorded[v], nil }
func (e *engine) Run(_ context.Context, m Migration) error {
	e.ran = append(e.ran, m.Name)
	e.recorded[m.Version] = true
	return nil
}

func TestApply(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_a.sql": {Data: []byte("a")}, "m/0002_b.sql": {Data: []byte("b")}, "m/0003_c.sql": {Data: []byte("c")},
	}
	cases := []struct {
		name             string
		recorded, racing []int
		ran              []string
		err              string
	}{
		{name: "fresh", ran: []string{"0001_a.sql", "0002_b.sql", "0003_c.sql"}},
		{name: "pending only", recorded: []int{1}, ran: []string{"0002_b.sql", "0003_c.sql"}},
		{name: "up to date", recorded: []int{1, 2, 3}},
		{name: "applied by another process meanwhile", recorded: []int{1}, racing: []int{2}, ran: []string{"0003_c.sql"}},
		{name: "newer schema refused", recorded: []int{1, 2, 3, 4}, err: "test: database schema version 4 is newer than this binary's 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &engine{recorded: map[int]bool{}, appliedMeanwhile: map[int]bool{}}
			for _, v := range c.recorded {
				e.recorded[v] = true
			}
			for _, v := range c.racing {
				e.appliedMeanwhile[v] = true
			}
			err := Apply(context.Background(), e.Engine(), fsys, "m")
			if c.err != "" {
				if err == nil || err.Error() != c.err || len(e.ran) > 0 {
					t.Fatalf("err %v, ran %v; want %q and nothing run", err, e.ran, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(e.ran, c.ran) {
				t.Fatalf("err %v, ran %v; want %v", err, e.ran, c.ran)
			}
		})
	}
}
