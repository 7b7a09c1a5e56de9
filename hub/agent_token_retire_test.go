package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/fakeclock"
	"github.com/scion-go/scion/internal/testenv"
)

// TestAgentTokenRenewalRetiresTheOld: a renewal retires the token it was
// made with. The old token works for the grace after the renewal (the
// agent's requests in flight) and renews within it to the very same new
// token (a lost answer, or racing renewals, never move the generation
// twice); a grace later it is refused, renewals with it included, so a
// leaked copy dies at the agent's next renewal. The new token and the
// tokens a restart hands out keep working (issue 27, item 4).
func TestAgentTokenRenewalRetiresTheOld(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		const ttl = time.Hour
		clock := fakeclock.New(time.Now().Truncate(time.Second))
		e := testenv.New(t, testenv.Options{Postgres: pg, Brokers: 1, AgentTokenTTL: ttl, Now: clock.Now})
		ctx := context.Background()
		a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		tok0 := agentToken(t, e, a.ID)
		renew := func(tok string) (string, error) {
			nt, err := client.New(e.URL, tok).RefreshAgentToken(ctx)
			if err != nil {
				return "", err
			}
			return nt.Token, nil
		}

		clock.Advance(ttl / 2)
		tok1, err := renew(tok0)
		if err != nil {
			t.Fatal(err)
		}
		if tok1 == tok0 {
			t.Fatal("the renewal answered the same token")
		}
		// Within the grace: the old token works, and its renewals, also
		// several at once, answer the token the first renewal did.
		clock.Advance(api.AgentTokenGrace - time.Second)
		if err := whoamiErr(e, tok0); err != nil {
			t.Fatalf("the old token within the grace: %v", err)
		}
		same := renewAll(t, tok0, 8, renew)
		if same != tok1 {
			t.Fatal("a renewal with the old token within the grace answered another token than the first renewal")
		}
		// At the grace's end the old token is refused: for calls and for
		// renewals. The new one works.
		clock.Advance(time.Second)
		apiErr(t, whoamiErr(e, tok0), 401, api.CodeUnauthorized)
		_, err = renew(tok0)
		apiErr(t, err, 401, api.CodeUnauthorized)
		if err := whoamiErr(e, tok1); err != nil {
			t.Fatalf("the renewed token: %v", err)
		}

		// Racing renewals with the current token move it on once: every
		// one answers the same next token, and the one before is retired
		// a grace later.
		clock.Advance(ttl / 2)
		tok2 := renewAll(t, tok1, 8, renew)
		c1, _ := api.ReadAgentTokenClaims(tok1)
		c2, ok := api.ReadAgentTokenClaims(tok2)
		if !ok || c2.Generation != c1.Generation+1 {
			t.Fatalf("after racing renewals the token is of generation %d, the one before %d", c2.Generation, c1.Generation)
		}
		clock.Advance(api.AgentTokenGrace)
		apiErr(t, whoamiErr(e, tok1), 401, api.CodeUnauthorized)

		// A restart hands out a token of the current generation and
		// retires nothing: the agent's renewed token keeps working.
		// (The broker writes it to the agent's home, which the fake
		// runtime does not make.)
		dirs, _ := filepath.Glob(filepath.Join(e.Brokers()[0].DataDir, "projects", "*", "agents", a.ID))
		if len(dirs) != 1 {
			t.Fatalf("agent dir: %v", dirs)
		}
		if err := os.MkdirAll(filepath.Join(dirs[0], "home"), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Admin.AgentAction(ctx, a.ID, "", "restart"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirs[0], "home", filepath.FromSlash(api.AgentTokenFile)))
		if err != nil {
			t.Fatal(err)
		}
		fresh := strings.TrimSpace(string(b))
		if c, ok := api.ReadAgentTokenClaims(fresh); !ok || c.Generation != c2.Generation {
			t.Fatalf("the restart's token is of generation %d, want the current %d", c.Generation, c2.Generation)
		}
		clock.Advance(api.AgentTokenGrace + time.Second)
		for name, tok := range map[string]string{"the restart's": fresh, "the renewed": tok2} {
			if err := whoamiErr(e, tok); err != nil {
				t.Fatalf("%s token after a restart: %v", name, err)
			}
		}
		e.NeverLogged(tok0, tok1, tok2, fresh)
	})
}

// renewAll renews with tok n times at once and returns the token they
// all answered (failing the test when they differ or one fails).
func renewAll(t *testing.T, tok string, n int, renew func(string) (string, error)) string {
	t.Helper()
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = renew(tok)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("renewal %d of %d at once: %v", i, n, errs[i])
		}
		if got[i] != got[0] {
			t.Fatalf("renewals at once answered different tokens")
		}
	}
	return got[0]
}
