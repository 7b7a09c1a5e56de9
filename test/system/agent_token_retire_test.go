package system

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// TestAgentTokenRenewalRetiresTheOld (issue 27, item 4) against the real
// binary, on the real clock: after an agent renews its token, the old one
// keeps working for the grace (and renews to the same new token), then
// the Hub refuses it, renewal included; the new one works. It waits the
// grace out (60 s), in parallel with the other tests.
func TestAgentTokenRenewalRetiresTheOld(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	hub := startWorkstationHub(t, newHost(t, "workstation"), hbFlags...)
	cl := client.New(hub.URL, readWorkstation(t, hub.host).AdminToken)
	waitLocalBrokerOnline(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"sleep", "3600"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := cl.Exec(ctx, a.ID, "", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	old := strings.TrimSpace(out.String())
	whoami := func(tok string) error { _, err := client.New(hub.URL, tok).Whoami(ctx); return err }

	renewed := time.Now()
	nt, err := client.New(hub.URL, old).RefreshAgentToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := client.New(hub.URL, old).RefreshAgentToken(ctx)
	if err != nil || again.Token != nt.Token {
		t.Fatalf("a second renewal with the old token within the grace: %v (same token: %v)", err, err == nil && again.Token == nt.Token)
	}
	// Poll the old token until it is refused: not before the grace (less
	// the second the renewal's time is truncated to), and by its end.
	for {
		err := whoami(old)
		since := time.Since(renewed)
		if err != nil {
			if !api.IsCode(err, api.CodeUnauthorized) {
				t.Fatalf("the old token %v after the renewal: %v", since, err)
			}
			if since < api.AgentTokenGrace-time.Second-200*time.Millisecond {
				t.Fatalf("the old token was refused %v after the renewal, within the grace (%v)", since, api.AgentTokenGrace)
			}
			break
		}
		if since > api.AgentTokenGrace+5*time.Second {
			t.Fatalf("the old token still works %v after the renewal", since)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, err := client.New(hub.URL, old).RefreshAgentToken(ctx); !api.IsCode(err, api.CodeUnauthorized) {
		t.Fatalf("renewing with the old token after the grace: %v, want unauthorized", err)
	}
	if err := whoami(nt.Token); err != nil {
		t.Fatalf("the renewed token: %v", err)
	}
	if logs := hub.proc.Logs(); strings.Contains(logs, old) || strings.Contains(logs, nt.Token) {
		t.Error("an agent token appears in the Hub's log")
	}
	if !strings.Contains(hub.proc.Logs(), "agent token of a retired generation refused") {
		t.Error("the Hub did not log the refusal of the retired token")
	}
}
