package process

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
)

func TestReadProcStat(t *testing.T) {
	ps, err := readProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ps.startTicks == 0 || ps.state == 'Z' {
		t.Fatalf("own stat = %+v", ps)
	}
	if alive, stopped := probe(procID{Pid: os.Getpid(), StartTicks: ps.startTicks, BootID: bootID()}); !alive || stopped {
		t.Fatalf("probe(self) = %v, %v; want alive, not stopped", alive, stopped)
	}
	for _, p := range []procID{
		{Pid: os.Getpid(), StartTicks: ps.startTicks + 1, BootID: bootID()}, // recycled pid
		{Pid: os.Getpid(), StartTicks: ps.startTicks, BootID: "another-boot"},
		{Pid: 0},
	} {
		if alive, _ := probe(p); alive {
			t.Errorf("probe(%+v) = alive, want dead", p)
		}
	}
}

// A record whose pid now belongs to another process (same pid, different
// start time) must read as exited, and Stop must not signal that process.
func TestRecycledPidIsNeverSignalled(t *testing.T) {
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	spec := runtime.Spec{AgentID: "a", Command: []string{"sleep", "600"}, WorkDir: filepath.Join(t.TempDir(), "w")}
	if _, err := r.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Start(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	rec, err := r.load("a")
	if err != nil {
		t.Fatal(err)
	}
	orig := rec.Proc
	defer syscall.Kill(-orig.Pid, syscall.SIGKILL)

	rec.Proc.StartTicks++ // as if the recorded process died and its pid was reused
	if err := r.save("a", rec); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.Inspect(ctx, "a"); st.State != runtime.StateExited {
		t.Fatalf("state with a recycled pid = %s, want exited", st.State)
	}
	if _, err := r.Stop(ctx, "a", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if alive, _ := probe(orig); !alive {
		t.Fatal("Stop/Delete signalled a process that merely reuses the recorded pid")
	}
}
