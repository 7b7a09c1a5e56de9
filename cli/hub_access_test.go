package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
)

// TestTokensSecretsUsersCommands drives the real commands against an
// in-process Hub: a token is shown once and works for its project only,
// revoke ends it; a secret is set from stdin and listed by name only; an
// admin promotes a user.
func TestTokensSecretsUsersCommands(t *testing.T) {
	setHome(t)
	e := testenv.New(t, testenv.Options{Brokers: 1})
	mustRun(t, "hub", "add", "team", e.URL, "--use", "--token", e.AdminToken)

	r := mustRun(t, "hub", "tokens", "create", "--name", "ci", "--project", "default", "--scope", "project:read", "-o", "json")
	var tok api.AccessToken
	if err := json.Unmarshal([]byte(r.out), &tok); err != nil || !strings.HasPrefix(tok.Token, "scp_") {
		t.Fatalf("token create: %q %v", r.out, err)
	}
	r = mustRun(t, "hub", "tokens", "list")
	if !strings.Contains(r.out, tok.ID) || strings.Contains(r.out, tok.Token) {
		t.Fatalf("tokens list must show the token's ID and never its value:\n%s", r.out)
	}
	mustRun(t, "hub", "add", "ci", e.URL, "--token", tok.Token)
	r = mustRun(t, "project", "show", "default", "--hub", "ci")
	if !strings.Contains(r.out, "default") {
		t.Fatalf("the token reads its project: %s", r.out)
	}
	r = runCLI(t, "", "project", "create", "nope", "--hub", "ci")
	if r.code == 0 || !strings.Contains(r.err, "error: forbidden:") {
		t.Fatalf("a token cannot create projects: exit %d %s", r.code, r.err)
	}
	mustRun(t, "hub", "tokens", "revoke", tok.ID)
	r = runCLI(t, "", "project", "show", "default", "--hub", "ci")
	if r.code == 0 || !strings.Contains(r.err, "error: unauthorized:") {
		t.Fatalf("a revoked token is refused: exit %d %s", r.code, r.err)
	}

	const value = "hunter2-very-secret"
	r = runCLI(t, value+"\n", "hub", "secret", "set", "DB_PASSWORD", "--project", "default")
	if r.code != 0 || strings.Contains(r.out, value) {
		t.Fatalf("secret set: exit %d %q %q", r.code, r.out, r.err)
	}
	r = mustRun(t, "hub", "secret", "list", "--project", "default", "-o", "json")
	if !strings.Contains(r.out, "DB_PASSWORD") || strings.Contains(r.out, value) {
		t.Fatalf("secret list shows names only: %s", r.out)
	}
	r = runCLI(t, "", "hub", "secret", "set", "EMPTY")
	if r.code == 0 {
		t.Fatal("a secret with no value on stdin is refused")
	}

	if err := e.Store.CreateUser(context.Background(), &store.User{ID: "newcomer", Name: "newcomer", Role: api.RoleViewer, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "hub", "users", "list")
	if !strings.Contains(r.out, "newcomer") || !strings.Contains(r.out, "viewer") {
		t.Fatalf("users list: %s", r.out)
	}
	r = mustRun(t, "hub", "users", "set-role", "newcomer", "member")
	if !strings.Contains(r.out, "now member") {
		t.Fatalf("set-role: %s", r.out)
	}
}
