package migrate

import (
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
