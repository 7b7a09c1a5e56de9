package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// settingsRace is a recording pass-through in front of a real Hub: before
// forwarding the first `interfere` PUTs of the settings it makes another
// admin's write (an experiment switched), as if a second admin wrote
// between the CLI's read and its write.
type settingsRace struct {
	mu        sync.Mutex
	e         *testenv.Env
	interfere int
	write     func(n int) api.HubSettingsUpdate // the other admin's nth write
	puts      []string                          // bodies of the PUTs the CLI sent
	ifMatch   []string
}

func (p *settingsRace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && r.URL.Path == api.Prefix+"/settings" {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		p.mu.Lock()
		p.puts = append(p.puts, string(b))
		p.ifMatch = append(p.ifMatch, r.Header.Get("If-Match"))
		n := len(p.puts)
		p.mu.Unlock()
		if n <= p.interfere {
			if _, _, err := p.e.Admin.UpdateSettings(r.Context(), p.write(n), ""); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
		}
	}
	u, _ := url.Parse(p.e.URL)
	httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
}

// TestHubSettingsSetIsPartialAndConditional: `scion hub settings set`
// sends only the settings given (so another admin's experiment survives),
// conditional on the version it read (If-Match); when another admin wrote
// in between, the Hub's 412 makes it read and send again, and after
// three such races in a row it says so and fails, having changed nothing
// (issue 27, item 8).
func TestHubSettingsSetIsPartialAndConditional(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	ctx := context.Background()
	race := &settingsRace{e: e, interfere: 1, write: func(int) api.HubSettingsUpdate {
		return api.HubSettingsUpdate{Experiments: map[string]bool{api.ExperimentFlatRuntimeBrokers: true}}
	}}
	proxy := httptest.NewServer(race)
	defer proxy.Close()
	useHub(t, "team", proxy.URL, e.AdminToken)

	mustRun(t, "hub", "settings", "set", "--default-image", "img:2")
	s, err := e.Admin.GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.AgentDefaults.DefaultImage != "img:2" || !s.Experiments[api.ExperimentFlatRuntimeBrokers] {
		t.Fatalf("after the CLI's set raced another admin's write: %+v, want the image and the other admin's experiment", s)
	}
	if len(race.puts) != 2 {
		t.Fatalf("the CLI sent %d PUTs, want 2 (one refused with 412, one retry)", len(race.puts))
	}
	for i, b := range race.puts {
		var body map[string]map[string]any
		if err := json.Unmarshal([]byte(b), &body); err != nil {
			t.Fatal(err)
		}
		if len(body) != 1 || len(body["agent_defaults"]) != 1 || body["agent_defaults"]["default_image"] != "img:2" {
			t.Errorf("PUT %d sent %s, want only agent_defaults.default_image", i, b)
		}
		if race.ifMatch[i] == "" {
			t.Errorf("PUT %d had no If-Match", i)
		}
	}
	if race.ifMatch[0] == race.ifMatch[1] {
		t.Errorf("the retry sent the stale version %s again", race.ifMatch[1])
	}

	// Raced every time: it gives up after three tries and says why.
	other := func(n int) string { return "other:" + string(rune('0'+n)) }
	race.mu.Lock()
	race.interfere, race.puts, race.ifMatch = 100, nil, nil
	race.write = func(n int) api.HubSettingsUpdate {
		img := other(n)
		return api.HubSettingsUpdate{AgentDefaults: &api.AgentDefaultsUpdate{DefaultImage: &img}}
	}
	race.mu.Unlock()
	r := runCLI(t, "", "hub", "settings", "set", "--default-image", "img:3")
	if r.code == 0 || !strings.Contains(r.err, "changed by someone else 3 times") {
		t.Fatalf("raced every time: exit %d, stderr %q", r.code, r.err)
	}
	if len(race.puts) != 3 {
		t.Errorf("the CLI tried %d times, want 3", len(race.puts))
	}
	if s, err := e.Admin.GetSettings(ctx); err != nil || s.AgentDefaults.DefaultImage != other(3) {
		t.Fatalf("a refused set changed the image: %+v, %v", s, err)
	}
}

// TestSettingsSetRefusesWhatACreateWould: a default a create would refuse
// (an image with a space, an unknown harness) is a usage error before the
// Hub is asked, by the rule the Hub applies (api.AgentDefaultsUpdate).
func TestSettingsSetRefusesWhatACreateWould(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	for _, args := range [][]string{
		{"--default-image", "busybox latest"},
		{"--default-harness", "vim"},
	} {
		before := routeRequests(t, e, "PUT /api/v1/settings")
		r := runCLI(t, "", append([]string{"hub", "settings", "set"}, args...)...)
		if r.code != 2 || routeRequests(t, e, "PUT /api/v1/settings") != before {
			t.Errorf("settings set %v: exit %d (%s), want a usage error with nothing sent", args, r.code, strings.TrimSpace(r.err))
		}
	}
}
