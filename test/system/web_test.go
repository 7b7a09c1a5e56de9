package system

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/wait"
)

// chromiumPath is Debian's chromium (.ci/run installs it); a missing one
// skips the test, or fails it under CI=true.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (.ci/run installs Debian's chromium package)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// screenshotDir is where the page's screenshots go: docs/web when
// SCION_UPDATE_SCREENSHOTS is set (to refresh the ones docs/web.md
// shows), else the test's own directory.
func screenshotDir(t *testing.T) string {
	if os.Getenv("SCION_UPDATE_SCREENSHOTS") != "" {
		return filepath.Join("..", "..", "docs", "web")
	}
	return t.TempDir()
}

// TestWebPageInChromium: headless Chromium against a team Hub and a
// broker (separate processes, the process runtime): it signs in with a
// token, an agent started through the CLI appears on the open overview
// without a reload, and on the agent's page its logs stream in as the
// agent prints them. A screenshot of each view is written.
func TestWebPageInChromium(t *testing.T) {
	requireBinary(t)
	chromium := chromiumPath(t)
	t.Parallel()
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	b := &brokerHost{host: newHost(t, "web-b1"), brokerName: "web-b1"}
	b.useHub(t, hub.URL, token)
	b.mustScion(t, "runtime-broker", "register", "--name", "web-b1")
	b.mustScion(t, "runtime-broker", "provide", "--project", "default")
	b.proc = b.start(t, "broker-web-b1", append([]string{"runtime-broker", "start", "--runtime", "process"}, hbFlags...)...)
	waitBrokerOnline(t, client.New(hub.URL, token), "web-b1")
	admin.mustScion(t, "start", "first", "--", "sleep", "600")
	t.Cleanup(func() { _, _, _ = admin.scion("delete", "--all") })

	shots := screenshotDir(t)
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll := func(what, expr string, within time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(within))); err != nil {
			t.Fatalf("%s (%s): %v", what, expr, err)
		}
	}
	eval := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	text := func(css string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(css)))
		if err != nil {
			t.Fatalf("text of %s: %v", css, err)
		}
		return v
	}

	// Sign in with the admin token.
	do("open the page", chromedp.Navigate(hub.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")), shot("login.png"))
	do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#agents")))
	poll("the live feed", `document.getElementById("live").textContent === "live"`, 15*time.Second)

	// An agent started through the CLI appears without a reload (the
	// marker set on this page's window survives only if it is not
	// reloaded).
	eval(`window.__notReloaded = true`)
	admin.mustScion(t, "start", "web-demo", "--", "sh", "-c", `i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.3; done`)
	poll("web-demo running on the open overview",
		`[...document.querySelectorAll("#agents tbody tr")].some(r => r.textContent.includes("web-demo") && r.textContent.includes("web-b1") && r.querySelector(".phase-running") !== null)`,
		30*time.Second)
	if !eval(`window.__notReloaded === true`) {
		t.Fatal("the overview was reloaded to show the new agent")
	}
	if brokers := text("#brokers"); !strings.Contains(brokers, "web-b1") || !strings.Contains(brokers, "online") {
		t.Errorf("the brokers table does not show web-b1 online:\n%s", brokers)
	}
	do("overview screenshot", shot("overview.png"))

	// The agent's page: its logs stream in.
	do("open the agent", chromedp.Navigate(hub.URL+"/ui/agents/"+agentID(t, admin, "web-demo")), chromedp.WaitVisible(chromedp.CSS("#logs")))
	poll("logs stream", `document.getElementById("logs").textContent.includes("tick 3")`, 30*time.Second)
	eval(`window.__notReloaded = true`)
	n := strings.Count(text("#logs"), "tick")
	wait.Eventually(t, 20*time.Second, pollInterval, func() error {
		if strings.Count(text("#logs"), "tick") < n+3 {
			return errNotYet("more log lines")
		}
		return nil
	})
	if !eval(`window.__notReloaded === true`) {
		t.Fatal("the agent page was reloaded to show new log lines")
	}
	do("agent screenshot", shot("agent.png"))

	// Stopped through the CLI: the open agent page shows it.
	admin.mustScion(t, "stop", "web-demo")
	poll("stopped on the open page", `document.querySelector('#agent [data-field="phase"]').textContent === "stopped"`, 30*time.Second)
}

// agentID is the ID of agent slug, as the CLI lists it.
func agentID(t *testing.T, h *host, slug string) string {
	t.Helper()
	return listedAgent(t, h, slug).ID
}

type errNotYet string

func (e errNotYet) Error() string { return "not yet: " + string(e) }
