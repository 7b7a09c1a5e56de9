package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/sqlite"
)

// childEnv makes the test binary act as a Hub writing agents until it is
// killed (see TestMain and TestDurableAfterKill9).
const childEnv = "SCION_SQLITE_WRITER_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		writeUntilKilled(path)
		return
	}
	os.Exit(m.Run())
}

// writeUntilKilled creates and updates agents forever, printing each ID
// once both calls have returned nil.
func writeUntilKilled(path string) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	p := &store.Project{Name: "p"}
	if err := s.CreateProject(ctx, p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := 0; ; i++ {
		a := &store.Agent{Slug: fmt.Sprint(i), ProjectID: p.ID}
		err := s.CreateAgent(ctx, a, nil)
		if err == nil {
			a.Phase = "running"
			err = s.UpdateAgent(ctx, a)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(a.ID) // os.Stdout is unbuffered: the parent sees it now
	}
}

// TestDurableAfterKill9: everything a store call returned nil for is
// there after the process is SIGKILLed mid-stream and the file reopened
// (the interface's durability promise; WAL with synchronous=NORMAL).
func TestDurableAfterKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for len(acked) < 300 && sc.Scan() {
		acked = append(acked, sc.Text())
	}
	cmd.Process.Kill() // SIGKILL: no deferred code, no Close
	cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("child stopped after %d agents", len(acked))
	}

	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range acked {
		a, err := s.GetAgent(t.Context(), id)
		if err != nil {
			t.Fatalf("acknowledged agent %s lost: %v", id, err)
		}
		if a.Version != 2 || a.Phase != "running" {
			t.Fatalf("acknowledged update of %s lost: %+v", id, a)
		}
	}
}

// TestReopen: records survive Close and a second Open, which finds the
// schema current and changes nothing.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	p := &store.Project{Name: "kept"}
	a := &store.Agent{Slug: "a", ProjectID: "", Env: map[string]string{"K": "V"}}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	a.ProjectID = p.ID
	if err := s.CreateAgent(t.Context(), a, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSetting(t.Context(), "limits", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s, err = sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.GetProject(t.Context(), "kept"); err != nil || *got != *p {
		t.Fatalf("project after reopen: %+v, %v", got, err)
	}
	if got, err := s.GetAgent(t.Context(), a.ID); err != nil || got.Env["K"] != "V" || got.UpdatedAt != a.UpdatedAt {
		t.Fatalf("agent after reopen: %+v, %v", got, err)
	}
	if v, err := s.GetSetting(t.Context(), "limits"); err != nil || string(v) != `{"x":1}` {
		t.Fatalf("setting after reopen: %s, %v", v, err)
	}
}

// TestConcurrentOpen: two Hubs opening one new file at once both succeed.
func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := sqlite.Open(t.Context(), path)
			if err == nil {
				err = s.CreateProject(t.Context(), &store.Project{Name: fmt.Sprint(i)})
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
}
