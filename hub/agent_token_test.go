package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/fakeclock"
	"github.com/scion-go/scion/internal/testenv"
)

func whoamiErr(e *testenv.Env, tok string) error {
	_, err := client.New(e.URL, tok).Whoami(context.Background())
	return err
}

// TestAgentTokenExpiresAndRenews: an agent token carries its lifetime; the
// agent renews it with its current token before it runs out; an expired
// token is refused (401, and it cannot be renewed); a start of the agent
// hands the broker a fresh token, which the broker writes where the
// agent's CLI reads it (issue 12, item 7).
func TestAgentTokenExpiresAndRenews(t *testing.T) {
	const ttl = time.Minute
	clock := fakeclock.New(time.Now().Truncate(time.Second))
	e := testenv.New(t, testenv.Options{Brokers: 1, AgentTokenTTL: ttl, Now: clock.Now})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	tok0 := agentToken(t, e, a.ID)
	c0, ok := api.ReadAgentTokenClaims(tok0)
	if !ok || c0.IssuedAt != clock.Now().Unix() || c0.ExpiresAt-c0.IssuedAt != int64(ttl/time.Second) {
		t.Fatalf("claims %+v: want issued now (%v), expiring one lifetime (%v) later", c0, clock.Now(), ttl)
	}
	if err := whoamiErr(e, tok0); err != nil {
		t.Fatal(err)
	}
	// Not a user's or an access token's to renew.
	_, err = e.Admin.RefreshAgentToken(ctx)
	apiErr(t, err, 403, api.CodeForbidden)

	// A second later the renewal outlives the first token by a second
	// (expiries are in whole seconds).
	clock.Advance(time.Second)
	nt, err := client.New(e.URL, tok0).RefreshAgentToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c1, ok := api.ReadAgentTokenClaims(nt.Token)
	if !ok || c1.AgentID != a.ID || c1.ExpiresAt != c0.ExpiresAt+1 || nt.ExpiresAt.Unix() != c1.ExpiresAt {
		t.Fatalf("renewed token %+v (expiresAt %v), first %+v", c1, nt.ExpiresAt, c0)
	}
	// The first token works up to its expiry, and not at it.
	clock.Advance(ttl - time.Second - time.Millisecond)
	if err := whoamiErr(e, tok0); err != nil {
		t.Fatalf("the first token a millisecond before its expiry: %v", err)
	}
	clock.Advance(time.Millisecond)
	apiErr(t, whoamiErr(e, tok0), 401, api.CodeUnauthorized)
	_, err = client.New(e.URL, tok0).RefreshAgentToken(ctx)
	apiErr(t, err, 401, api.CodeUnauthorized)
	if err := whoamiErr(e, nt.Token); err != nil {
		t.Fatalf("the renewed token: %v", err)
	}

	// A restart delivers a fresh token to the agent's home (the broker's
	// runtime made the home; the fake runtime does not, so make it).
	dirs, _ := filepath.Glob(filepath.Join(e.Brokers()[0].DataDir, "projects", "*", "agents", a.ID))
	if len(dirs) != 1 {
		t.Fatalf("agent dir: %v", dirs)
	}
	home := filepath.Join(dirs[0], "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.AgentAction(ctx, a.ID, "", "restart"); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(home, filepath.FromSlash(api.AgentTokenFile))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", st.Mode().Perm())
	}
	fresh := strings.TrimSpace(string(b))
	if c, ok := api.ReadAgentTokenClaims(fresh); !ok || c.AgentID != a.ID {
		t.Fatalf("token file holds %q", fresh[:min(8, len(fresh))])
	}
	if err := whoamiErr(e, fresh); err != nil {
		t.Fatalf("the token written at restart: %v", err)
	}

	// Revocation on delete stays: every token of the agent dies with it.
	if err := e.Admin.DeleteAgent(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	apiErr(t, whoamiErr(e, fresh), 401, api.CodeUnauthorized)
	_, err = client.New(e.URL, fresh).RefreshAgentToken(ctx)
	apiErr(t, err, 401, api.CodeUnauthorized)
	e.NeverLogged(tok0, nt.Token, fresh)
}

// TestAgentTokenSurvivesHubRestart: the signing key is the database's
// (sealed with the secrets key file), so a token minted before a restart
// of the Hub over the same database and key file still works after it.
func TestAgentTokenSurvivesHubRestart(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := agentToken(t, e, a.ID)
	e.RestartHub()
	if err := whoamiErr(e, tok); err != nil {
		t.Fatalf("after a Hub restart: %v", err)
	}
	if _, err := client.New(e.URL, tok).RefreshAgentToken(ctx); err != nil {
		t.Fatalf("renewal after a Hub restart: %v", err)
	}
}
