package process

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/runtime"
)

func TestExecRunsInAgentEnvironment(t *testing.T) {
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	work := t.TempDir()
	spec := runtime.Spec{AgentID: "a1", WorkDir: work, Command: []string{"sleep", "30"}, Env: map[string]string{"AGENT_VAR": "from-agent"}}
	if _, err := r.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	defer r.Delete(ctx, "a1")
	if _, err := r.Start(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code, err := r.Exec(ctx, "a1", runtime.ExecRequest{
		Cmd:    []string{"/bin/sh", "-c", `echo "$AGENT_VAR $EXTRA $(pwd)"; cat; echo oops >&2; exit 3`},
		Env:    map[string]string{"EXTRA": "extra"},
		Stdin:  strings.NewReader("piped\n"),
		Stdout: &out, Stderr: &errOut,
	})
	if err != nil || code != 3 {
		t.Fatalf("code %d err %v", code, err)
	}
	if want := "from-agent extra " + work + "\npiped\n"; out.String() != want {
		t.Fatalf("stdout %q, want %q", out.String(), want)
	}
	if errOut.String() != "oops\n" {
		t.Fatalf("stderr %q", errOut.String())
	}
	// Cancelling stops a long command.
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Exec(cctx, "a1", runtime.ExecRequest{Cmd: []string{"sleep", "30"}}); err == nil {
		t.Fatal("cancelled exec returned no error")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("cancelled exec did not stop the command")
	}
	if _, err := r.Stop(ctx, "a1", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(ctx, "a1", runtime.ExecRequest{Cmd: []string{"true"}}); err == nil {
		t.Fatal("exec in a stopped agent succeeded")
	}
}
