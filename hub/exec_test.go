package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

func TestExecThroughHub(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code, err := e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"echo", "hello", "there"}}, &out, &errOut)
	if err != nil || code != 0 || out.String() != "hello there\n" {
		t.Fatalf("echo: code %d err %v out %q", code, err, out.String())
	}
	out.Reset()
	big := strings.Repeat("0123456789", 20000) // 200 KB through stdin and back
	code, err = e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"cat"}, Stdin: []byte(big)}, &out, nil)
	if err != nil || code != 0 || out.String() != big {
		t.Fatalf("cat: code %d err %v, %d bytes back", code, err, out.Len())
	}
	out.Reset()
	code, err = e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"fail", "boom"}}, &out, &errOut)
	if err != nil || code != 1 || errOut.String() != "boom\n" {
		t.Fatalf("fail: code %d err %v stderr %q", code, err, errOut.String())
	}
	code, _ = e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"exit", "42"}}, nil, nil)
	if code != 42 {
		t.Fatalf("exit code %d, want 42", code)
	}
	// The agent's own environment carries its Hub endpoint.
	out.Reset()
	if _, err := e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"env", api.EnvHubEndpoint}}, &out, nil); err != nil || strings.TrimSpace(out.String()) != e.URL {
		t.Fatalf("SCION_HUB_ENDPOINT in the agent = %q (%v), want %s", out.String(), err, e.URL)
	}
	// A stopped agent: a clear error with a status, not a stream.
	if _, err := e.Admin.AgentAction(ctx, "w", "default", "stop"); err != nil {
		t.Fatal(err)
	}
	_, err = e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"echo"}}, nil, nil)
	apiErr(t, err, 409, api.CodeInvalidPhase)
	_, err = e.Admin.Exec(ctx, "nope", "default", api.ExecRequest{Command: []string{"echo"}}, nil, nil)
	apiErr(t, err, 404, api.CodeAgentNotFound)
}

func TestAttachThroughHub(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	at, err := e.Admin.Attach(ctx, "w", "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"first line\n", "second line\n"} {
		if _, err := at.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(line))
		if _, err := io.ReadFull(at, got); err != nil || string(got) != line {
			t.Fatalf("echo of %q: %q %v", line, got, err)
		}
	}
	if err := at.Close(); err != nil {
		t.Fatal(err)
	}
	// Detaching leaves the agent running; stopping it ends a new attachment.
	a, err := e.Admin.GetAgent(ctx, "w", "default")
	if err != nil || a.Phase != api.PhaseRunning {
		t.Fatalf("after detach: %+v %v", a, err)
	}
	at2, err := e.Admin.Attach(ctx, "w", "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.AgentAction(ctx, "w", "default", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(at2); err != nil {
		t.Fatalf("attachment did not end cleanly when the agent stopped: %v", err)
	}
	_, err = e.Admin.Attach(ctx, "w", "default")
	apiErr(t, err, 409, api.CodeInvalidPhase)
}

// Credential-like env values reach the agent but never come back from the
// API.
func TestAgentEnvSecretsNotReturned(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"},
		Env: map[string]string{"ANTHROPIC_API_KEY": "sk-very-secret", "MODE": "fast"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Env["ANTHROPIC_API_KEY"] == "sk-very-secret" || a.Env["MODE"] != "fast" {
		t.Fatalf("create answer env = %v", a.Env)
	}
	l, _ := e.Admin.ListAllAgents(ctx, client.AgentFilter{})
	for _, x := range l {
		if strings.Contains(fmt.Sprint(x.Env), "sk-very-secret") {
			t.Fatal("list returns the secret")
		}
	}
	var out bytes.Buffer
	if _, err := e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"env", "ANTHROPIC_API_KEY"}}, &out, nil); err != nil || strings.TrimSpace(out.String()) != "sk-very-secret" {
		t.Fatalf("the agent itself must see its key: %q %v", out.String(), err)
	}
}
