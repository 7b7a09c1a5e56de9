package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
)

// runToExit creates and starts spec and waits until it has exited.
func runToExit(t *testing.T, rt runtime.Runtime, spec runtime.Spec) runtime.Status {
	t.Helper()
	ctx := context.Background()
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	var st runtime.Status
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		var err error
		st, err = rt.Inspect(ctx, spec.AgentID)
		if err != nil {
			return err
		}
		if st.State != runtime.StateExited {
			return fmt.Errorf("%s is %s, want exited", spec.AgentID, st.State)
		}
		return nil
	})
	return st
}

func TestEnvironmentAndDirectories(t *testing.T) {
	t.Setenv("SCION_BROKER_SECRET", "do-not-leak")
	rt := newRuntime(t)
	base := t.TempDir()
	spec := runtime.Spec{
		AgentID: "env",
		Command: []string{"sh", "-c", `echo "pwd=$(pwd)"; echo "home=$HOME"; echo "path=$PATH"; echo "foo=$FOO"; echo "secret=$SCION_BROKER_SECRET"; echo err >&2; touch made-by-agent`},
		Env:     map[string]string{"FOO": "bar baz", "HOME": "/ignored"},
		WorkDir: filepath.Join(base, "does", "not", "exist", "yet"),
		HomeDir: filepath.Join(base, "home"),
	}
	st := runToExit(t, rt, spec)
	if st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("agent failed: %+v", st)
	}
	out := readLogs(t, rt, spec.AgentID)
	for _, want := range []string{
		"pwd=" + spec.WorkDir, "home=" + spec.HomeDir, "foo=bar baz", "secret=", "err",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "path=/") {
		t.Errorf("agent has no default PATH:\n%s", out)
	}
	if fi, err := os.Stat(spec.HomeDir); err != nil || !fi.IsDir() {
		t.Errorf("HomeDir not created: %v", err)
	}

	// Delete removes the runtime's state but never the workspace.
	if err := rt.Delete(context.Background(), spec.AgentID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(spec.WorkDir, "made-by-agent")); err != nil {
		t.Fatalf("Delete touched the WorkDir: %v", err)
	}
}

func TestRecordOnDisk(t *testing.T) {
	rt := newRuntime(t)
	dir := rt.(interface{ StateDir() string }).StateDir()
	spec := runtime.Spec{
		AgentID: "rec", RunID: "r1", Image: "img:1",
		Command: []string{"true"}, Env: map[string]string{"API_KEY": "secret"},
		Labels: map[string]string{"custom": "yes"},
	}
	if _, err := rt.Create(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rec", "record.json")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// The record holds the agent's Env, which carries its credentials.
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("record.json mode %v, want private", perm)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{`"img:1"`, `"custom": "yes"`, `"scion.run_id": "r1"`, `"true"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("record lacks %s:\n%s", want, b)
		}
	}
}

func TestExitCodes(t *testing.T) {
	rt := newRuntime(t)
	base := t.TempDir()
	for _, tc := range []struct {
		cmd  []string
		code int
		log  string
	}{
		{[]string{"sh", "-c", "exit 42"}, 42, ""},
		{[]string{"no-such-command-scion"}, 127, "not found"},
		{[]string{"sh", "-c", "kill -KILL $$"}, 137, ""},
	} {
		id := strings.NewReplacer(" ", "", "$", "", "-", "").Replace(strings.Join(tc.cmd, ""))
		st := runToExit(t, rt, runtime.Spec{AgentID: id, Command: tc.cmd, WorkDir: filepath.Join(base, id)})
		if st.ExitCode == nil || *st.ExitCode != tc.code {
			t.Errorf("%v: exit %+v, want %d", tc.cmd, st, tc.code)
		}
		if st.FinishedAt.Before(st.StartedAt.Add(-time.Second)) {
			t.Errorf("%v: FinishedAt %v before StartedAt %v", tc.cmd, st.FinishedAt, st.StartedAt)
		}
		if out := readLogs(t, rt, id); !strings.Contains(out, tc.log) {
			t.Errorf("%v: log %q lacks %q", tc.cmd, out, tc.log)
		}
	}
}

func TestInvalidIDs(t *testing.T) {
	rt := newRuntime(t)
	for _, id := range []string{"", ".", "..", ".hidden", "a/b", "../escape", "x\x00y"} {
		if _, err := rt.Create(context.Background(), runtime.Spec{AgentID: id, Command: []string{"true"}}); err == nil {
			t.Errorf("Create(%q) succeeded", id)
		}
	}
}
