package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
)

// TestBrokerUnsupportedOperationReachesTheCLIAs501: on the real Hub and
// broker, a suspend the agent's runtime cannot do is the broker's 501
// unsupported_operation, and the CLI prints that code with the 501 (not
// the 502 of a runtime failure) and exits 1.
func TestBrokerUnsupportedOperationReachesTheCLIAs501(t *testing.T) {
	t.Setenv("SCION_HOME", t.TempDir())
	for _, k := range []string{api.EnvHubEndpoint, api.EnvHubURL, api.EnvAgentToken, api.EnvProject} {
		t.Setenv(k, "")
	}
	e := testenv.New(t, testenv.Options{Brokers: 1})
	l, err := config.LoadHubList()
	if err != nil {
		t.Fatal(err)
	}
	l.Hubs["env"] = &config.HubEntry{URL: e.URL, Token: e.AdminToken}
	l.Current = "env"
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	e.Brokers()[0].Runtime.FailNext("Suspend", fmt.Errorf("kubernetes runtime: suspend and resume are not supported: %w", errors.ErrUnsupported))

	root := NewRoot(Daemons{})
	var out, errb bytes.Buffer
	root.SetArgs([]string{"suspend", "k", "--project", "default"})
	root.SetOut(&out)
	root.SetErr(&errb)
	code := run(context.Background(), root)
	line := errb.String()
	t.Logf("scion suspend: %s", line)
	first, rest, _ := strings.Cut(line, "\n")
	if code != exitError || !strings.HasPrefix(first, "error: "+api.CodeUnsupportedOperation+": ") || !strings.HasSuffix(first, " (HTTP 501)") || out.Len() != 0 ||
		!strings.HasPrefix(rest, "Request ID: ") {
		t.Fatalf("scion suspend: exit %d, stderr %q, stdout %q; want exit 1 and %s with (HTTP 501), then the request ID", code, line, out.String(), api.CodeUnsupportedOperation)
	}
}
