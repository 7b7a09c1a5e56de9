package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/hubconn"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/fakeclock"
	"github.com/scion-go/scion/internal/testenv"
)

// TestAgentCLIRenewsItsToken: the scion CLI inside an agent renews the
// agent's token once half its lifetime has passed, keeps the new one in
// $HOME/.scion/agent-token, and goes on working after the token in its
// environment (which a running container cannot change) has expired.
func TestAgentCLIRenewsItsToken(t *testing.T) {
	setHome(t)
	const ttl = time.Minute
	// The Hub's and the CLI's clock: the test moves both past half the
	// token's lifetime, then past its end.
	clock := fakeclock.New(time.Now().Truncate(time.Second))
	t.Cleanup(func() { hubconn.Now = time.Now })
	hubconn.Now = clock.Now
	e := testenv.New(t, testenv.Options{Brokers: 1, AgentTokenTTL: ttl, Now: clock.Now})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := e.Admin.Exec(ctx, a.ID, "", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	envTok := strings.TrimSpace(out.String())
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(api.EnvHubEndpoint, e.URL)
	t.Setenv(api.EnvAgentToken, envTok)
	t.Setenv(api.EnvAgentID, a.ID)
	t.Setenv(api.EnvProject, "default")
	file := filepath.Join(home, ".scion", "agent-token")

	clock.Advance(ttl/2 - time.Second)
	mustRun(t, "list")
	if _, err := os.Stat(file); err == nil {
		t.Fatal("a token short of half its lifetime was renewed")
	}
	c0, _ := api.ReadAgentTokenClaims(envTok)
	clock.Advance(2 * time.Second) // past half of it
	if !hubconn.NeedsRenewal(c0, clock.Now()) {
		t.Fatal("the token is not due for renewal past half its lifetime")
	}
	mustRun(t, "list")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no renewed token stored: %v", err)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", st.Mode().Perm())
	}
	renewed := strings.TrimSpace(string(b))
	if c, ok := api.ReadAgentTokenClaims(renewed); !ok || c.AgentID != a.ID || c.ExpiresAt <= c0.ExpiresAt {
		t.Fatalf("stored token claims %+v, env token %+v", c, c0)
	}
	clock.Advance(ttl / 2) // the environment's token has expired
	if _, err := client.New(e.URL, envTok).Whoami(ctx); !api.IsCode(err, api.CodeUnauthorized) {
		t.Fatalf("the environment's token after its expiry: %v, want unauthorized", err)
	}
	r := mustRun(t, "list")
	if !strings.Contains(r.out, "a") {
		t.Errorf("list as the agent after its env token expired: %q", r.out)
	}
	e.NeverLogged(envTok, renewed)
}
