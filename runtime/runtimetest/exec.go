package runtimetest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/scion-go/scion/runtime"
)

// execer returns the runtime as a runtime.Execer. The exec tests run only
// when Options give an exec command, so a runtime without Execer there is
// a mistake in the suite's set-up, not a capability to skip.
func (e *env) execer() runtime.Execer {
	e.t.Helper()
	ex, ok := e.rt.(runtime.Execer)
	if !ok {
		e.t.Fatal("Options.ExecCommand or EchoCommand is set but the runtime does not implement runtime.Execer")
	}
	return ex
}

func (s *suite) testExec(t *testing.T) {
	s.needProcess(t)
	if s.opts.ExecCommand == nil {
		t.Skip("no Options.ExecCommand")
	}
	e := s.setup(t)
	ex := e.execer()
	spec := e.spec("exec", false)
	e.createStart(spec)

	for _, code := range []int{3, 0} {
		var out, errOut bytes.Buffer
		got, err := ex.Exec(e.ctx, spec.AgentID, runtime.ExecRequest{
			Cmd: s.opts.ExecCommand("exec-out", code), Stdout: &out, Stderr: &errOut,
		})
		if err != nil || got != code {
			t.Fatalf("Exec = %d, %v; want %d (stdout %q, stderr %q)", got, err, code, out.String(), errOut.String())
		}
		if countLines(out.String(), "exec-out") != 1 {
			t.Fatalf("Exec stdout = %q, want the line exec-out", out.String())
		}
	}
	// The command ran beside the agent, not instead of it.
	if got := e.inspect(spec.AgentID).State; got != runtime.StateRunning {
		t.Fatalf("agent after Exec: %q, want running", got)
	}
	if out, _ := e.logs(spec.AgentID); strings.Contains(out, "exec-out") {
		t.Errorf("Exec output leaked into the agent's log: %s", quoteTail(out))
	}

	_, err := ex.Exec(e.ctx, "rtt-no-such-agent", runtime.ExecRequest{Cmd: s.opts.ExecCommand("x", 0)})
	wantNotFound(t, "Exec of an unknown agent", err)
	if _, err := e.rt.Stop(e.ctx, spec.AgentID, longGrace); err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Exec(e.ctx, spec.AgentID, runtime.ExecRequest{Cmd: s.opts.ExecCommand("x", 0)}); err == nil {
		t.Error("Exec in an exited agent succeeded, want an error")
	}
}

func (s *suite) testExecStdin(t *testing.T) {
	s.needProcess(t)
	if s.opts.EchoCommand == nil {
		t.Skip("no Options.EchoCommand")
	}
	e := s.setup(t)
	ex := e.execer()
	spec := e.spec("execstdin", false)
	e.createStart(spec)

	const in = "line one\nline two\n"
	var out bytes.Buffer
	code, err := ex.Exec(e.ctx, spec.AgentID, runtime.ExecRequest{
		Cmd: s.opts.EchoCommand, Stdin: strings.NewReader(in), Stdout: &out,
	})
	if err != nil || code != 0 {
		t.Fatalf("Exec echo = %d, %v; want 0", code, err)
	}
	if out.String() != in {
		t.Fatalf("Exec echo stdout = %q, want %q (end of input must reach the command)", out.String(), in)
	}
}

func (s *suite) testAttach(t *testing.T) {
	s.needProcess(t)
	if s.opts.EchoCommand == nil {
		t.Skip("no Options.EchoCommand")
	}
	e := s.setup(t)
	at, ok := e.rt.(runtime.Attacher)
	if !ok {
		t.Skip("runtime does not implement runtime.Attacher")
	}
	spec := e.spec("attach", false)
	spec.Command = s.opts.EchoCommand
	if _, err := e.rt.Create(e.ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.Start(e.ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}

	// attachEcho attaches, writes line and waits for the agent to echo it.
	attachEcho := func(line string) {
		t.Helper()
		a, err := at.Attach(e.ctx, spec.AgentID)
		if err != nil {
			t.Fatalf("Attach: %v", err)
		}
		defer a.Close()
		st := newStream(a)
		if _, err := a.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("write to attachment: %v", err)
		}
		st.waitLine(t, line, s.opts.Timeout)
		if err := a.Close(); err != nil {
			t.Fatalf("Close (detach): %v", err)
		}
		st.waitEnd(t, s.opts.Timeout)
	}
	attachEcho(marker(spec.AgentID))
	// Detaching leaves the agent running, ready for the next attachment.
	if got := e.inspect(spec.AgentID).State; got != runtime.StateRunning {
		t.Fatalf("agent after detach: %q, want running", got)
	}
	attachEcho(marker(spec.AgentID) + " again")

	_, err := at.Attach(e.ctx, "rtt-no-such-agent")
	wantNotFound(t, "Attach to an unknown agent", err)
}
