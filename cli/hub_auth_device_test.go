package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/oidcprovider"
	"github.com/scion-go/scion/internal/wait"
)

// oidcEnv is an in-process Hub with OIDC sign-in against an in-process
// provider, added to an empty hub list as "team".
func oidcEnv(t *testing.T) (*testenv.Env, *oidcprovider.Provider) {
	t.Helper()
	setHome(t)
	old := devicePollUnit
	devicePollUnit = 10 * time.Millisecond // the provider's 5 s interval becomes 50 ms
	t.Cleanup(func() { devicePollUnit = old })
	p := oidcprovider.New(t, oidcprovider.Options{})
	e := testenv.New(t, testenv.Options{OIDC: &signin.Config{IssuerURL: p.Issuer, ClientID: p.ClientID,
		ClientSecret: p.ClientSecret, RequestsPerMinute: 60000, Burst: 1000}})
	mustRun(t, "hub", "add", "team", e.URL, "--use")
	return e, p
}

// loginAsync runs `scion hub auth login --device` and returns its result
// on a channel.
func loginAsync(t *testing.T) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- runCLI(t, "", "hub", "auth", "login", "--device") }()
	return ch
}

// userCode waits until the CLI has started a flow and returns its code.
func userCode(t *testing.T, p *oidcprovider.Provider) string {
	t.Helper()
	var code string
	wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
		cs := p.UserCodes()
		if len(cs) != 1 {
			return fmt.Errorf("pending sign-ins %v, want one", cs)
		}
		code = cs[0]
		return nil
	})
	return code
}

func waitPolls(t *testing.T, p *oidcprovider.Provider, code string, n int) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, wait.Interval, func() error {
		if got := p.Polls(code); got < n {
			return fmt.Errorf("%d polls, want %d", got, n)
		}
		return nil
	})
}

func waitResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("scion hub auth login did not finish")
	}
	return result{}
}

func TestHubAuthLoginDeviceFlow(t *testing.T) {
	e, p := oidcEnv(t)
	done := loginAsync(t)
	code := userCode(t, p)
	waitPolls(t, p, code, 2) // pending: it keeps polling
	if err := p.SlowDown(code); err != nil {
		t.Fatal(err)
	}
	waitPolls(t, p, code, 4) // and after slow_down too
	if err := p.Approve(code, oidcprovider.Claims{Subject: "alice-sub", Email: "alice@example.com", EmailVerified: true, Name: "Alice"}); err != nil {
		t.Fatal(err)
	}
	r := waitResult(t, done)
	if r.code != 0 {
		t.Fatalf("login: exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
	}
	want := fmt.Sprintf("Open %s/device?user_code=%s and enter code %s", p.Issuer, code, code)
	if !strings.Contains(r.err, want) || !strings.Contains(r.err, "Waiting for the sign-in to be approved") || !strings.Contains(r.err, "..") {
		t.Errorf("stderr lacks the instructions or the progress:\n%s", r.err)
	}
	if !strings.Contains(r.out, "Signed in to team as user Alice (role viewer).") {
		t.Errorf("stdout: %s", r.out)
	}
	l, _ := config.LoadHubList()
	tok := l.Hubs["team"].Token
	if !strings.HasPrefix(tok, "scu_") {
		t.Fatalf("stored token %q", tok)
	}
	if strings.Contains(r.out+r.err, tok) {
		t.Error("the token was printed")
	}
	who, err := client.New(e.URL, tok).Whoami(context.Background())
	if err != nil || who.Name != "Alice" || who.Role != "viewer" {
		t.Fatalf("whoami with the stored token: %+v %v", who, err)
	}
	// Later commands use it.
	mustRun(t, "hub", "brokers")

	// A second login finds the same user.
	done = loginAsync(t)
	code2 := userCode(t, p)
	if err := p.Approve(code2, oidcprovider.Claims{Subject: "alice-sub", Name: "Alice"}); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, done); r.code != 0 {
		t.Fatalf("second login: %+v", r)
	}
	l, _ = config.LoadHubList()
	who2, err := client.New(e.URL, l.Hubs["team"].Token).Whoami(context.Background())
	if err != nil || who2.ID != who.ID || l.Hubs["team"].Token == tok {
		t.Fatalf("second login: %+v %v (first %+v)", who2, err, who)
	}
}

func TestHubAuthLoginDeviceDenied(t *testing.T) {
	_, p := oidcEnv(t)
	done := loginAsync(t)
	code := userCode(t, p)
	if err := p.Deny(code); err != nil {
		t.Fatal(err)
	}
	r := waitResult(t, done)
	if r.code != 1 || !strings.Contains(r.err, "\nerror: access_denied: the sign-in was denied at the provider\n") {
		t.Fatalf("denied: exit %d\nstderr: %q", r.code, r.err)
	}
	if l, _ := config.LoadHubList(); l.Hubs["team"].Token != "" {
		t.Error("a token was stored after a denied sign-in")
	}
}

func TestHubAuthLoginDeviceWithoutOIDC(t *testing.T) {
	setHome(t)
	e := testenv.New(t, testenv.Options{})
	mustRun(t, "hub", "add", "team", e.URL, "--use")
	r := runCLI(t, "", "hub", "auth", "login", "--device")
	if r.code != 1 || !strings.Contains(r.err, "has no OIDC sign-in configured") {
		t.Fatalf("--device without OIDC: %+v", r)
	}
	r = runCLI(t, "", "hub", "auth", "login", "--device", "--token", "x")
	if r.code != 2 || !strings.Contains(r.err, "--device and --token exclude each other") {
		t.Fatalf("--device --token: %+v", r)
	}
	// The token path is unchanged.
	r = runCLI(t, e.AdminToken+"\n", "hub", "auth", "login")
	if r.code != 0 || !strings.Contains(r.out, "Signed in to team as user admin") {
		t.Fatalf("token login: %+v", r)
	}
}
