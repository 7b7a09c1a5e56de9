package process

import (
	"context"
	"os"
	"os/exec"
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
	// A process that is not the agent's (it carries no marker of ours) and
	// that holds a pid the record names with another start time: as if
	// the recorded process died and its pid was reused.
	other := exec.Command("sleep", "600")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-other.Process.Pid, syscall.SIGKILL); other.Wait() }()
	orig, err := identify(other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rec.Proc = orig
	rec.Proc.StartTicks++
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
