package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// engines runs a test on SQLite and on PostgreSQL.
func engines(t *testing.T, f func(t *testing.T, pg bool)) {
	t.Run("sqlite", func(t *testing.T) { f(t, false) })
	t.Run("postgres", func(t *testing.T) { f(t, true) })
}

func apiErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want *api.Error %d %s", err, err, status, code)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", e.Status, e.Code, e.Message, status, code)
	}
}

func TestAgentLifecycle(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg, Brokers: 1})
		ctx := context.Background()
		b := e.Brokers()[0]
		a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "worker", Project: "default", Start: true, Command: []string{"run"}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Phase != api.PhaseRunning || a.BrokerID != b.ID || a.BrokerName != "b1" || a.Generation != 1 || a.RunID == "" {
			t.Fatalf("created agent = %+v", a)
		}
		got, err := e.Admin.GetAgent(ctx, "worker", "default")
		if err != nil || got.ID != a.ID {
			t.Fatalf("get by slug: %+v %v", got, err)
		}
		st, err := b.Runtime.Inspect(ctx, a.ID)
		if err != nil || st.State != "running" {
			t.Fatalf("runtime sees %+v %v", st, err)
		}
		running := func(n int) {
			t.Helper()
			br, err := e.Admin.GetBroker(ctx, b.ID)
			if err != nil || br.RunningAgents != n {
				t.Fatalf("broker running agents = %d (%v), want %d", br.RunningAgents, err, n)
			}
		}
		running(1)
		for _, step := range []struct {
			action, phase string
			slots         int
		}{
			{"stop", api.PhaseStopped, 0}, {"start", api.PhaseRunning, 1}, {"restart", api.PhaseRunning, 1},
			{"suspend", api.PhaseSuspended, 0}, {"resume", api.PhaseRunning, 1},
		} {
			a, err = e.Admin.AgentAction(ctx, "worker", "default", step.action)
			if err != nil {
				t.Fatalf("%s: %v", step.action, err)
			}
			if a.Phase != step.phase {
				t.Fatalf("%s: phase %s, want %s", step.action, a.Phase, step.phase)
			}
			running(step.slots)
		}
		rc, err := e.Admin.Logs(ctx, "worker", "default", false, 0)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(rc)
		rc.Close()
		if !strings.Contains(string(out), a.ID) {
			t.Fatalf("logs = %q", out)
		}
		if err := e.Admin.DeleteAgent(ctx, "worker", "default"); err != nil {
			t.Fatal(err)
		}
		_, err = e.Admin.GetAgent(ctx, "worker", "default")
		apiErr(t, err, 404, api.CodeAgentNotFound)
		if _, err := b.Runtime.Inspect(ctx, a.ID); err == nil {
			t.Fatal("container still exists after delete")
		}
		running(0)
	})
}

func TestCreateOnlyProvisions(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	a, err := e.Admin.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "idle", Project: "default", Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Phase != api.PhaseCreated {
		t.Fatalf("phase %s, want created", a.Phase)
	}
	br, _ := e.Admin.GetBroker(context.Background(), a.BrokerID)
	if br.RunningAgents != 0 {
		t.Fatalf("a created (not started) agent holds a slot")
	}
}

func TestLargeCreateBody(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	a, err := e.Admin.CreateAgent(context.Background(), api.CreateAgentRequest{Name: "big", Project: "default", Start: true,
		Command: []string{"run"}, Payload: json.RawMessage(big)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Phase != api.PhaseRunning {
		t.Fatalf("phase %s", a.Phase)
	}
}

func TestQuotaExceeded(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	two := 2
	b := e.Brokers()[0]
	if _, err := e.Admin.UpdateBroker(ctx, b.ID, api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: &two}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a1", "a2"} {
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: n, Project: "default", Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a3", Project: "default", Start: true, Command: []string{"x"}})
	apiErr(t, err, 429, api.CodeQuotaExceeded)
	// A refused restart leaves the running agents alone; stopping frees a slot.
	if _, err := e.Admin.AgentAction(ctx, "a1", "default", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a3", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatalf("after a stop the slot should be free: %v", err)
	}
	_, err = e.Admin.AgentAction(ctx, "a1", "default", "start")
	apiErr(t, err, 429, api.CodeQuotaExceeded)
	a1, _ := e.Admin.GetAgent(ctx, "a1", "default")
	if a1.Phase != api.PhaseStopped {
		t.Fatalf("refused start changed the agent: %s", a1.Phase)
	}
}

func TestBrokerGoesOfflineAndBack(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 2})
	b := e.Brokers()[0]
	start := time.Now()
	e.StopBroker(b)
	e.WaitBrokerStatus(b.ID, api.BrokerOffline)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("offline after %v", d)
	}
	e.StartBroker(b, b.Runtime)
	list, err := e.Admin.ListBrokers(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != 2 || len(list.Items) != 2 {
		t.Fatalf("brokers after reconnect: %d (%d items), want 2", list.Total, len(list.Items))
	}
}

func TestAgentsOnOfflineBrokerFailFast(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	b := e.Brokers()[0]
	e.StopBroker(b)
	e.WaitBrokerStatus(b.ID, api.BrokerOffline)
	_, err := e.Admin.AgentAction(ctx, "w", "default", "restart")
	apiErr(t, err, 503, api.CodeBrokerOffline)
	_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w2", Project: "default", Start: true, Command: []string{"x"}})
	apiErr(t, err, 503, api.CodeBrokerOffline)
}

func TestPlacementNeedsChoiceWithTwoProviders(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 2})
	ctx := context.Background()
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Command: []string{"x"}})
	apiErr(t, err, 409, api.CodeMultipleBrokers)
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Broker: "b2", Command: []string{"x"}})
	if err != nil || a.BrokerName != "b2" {
		t.Fatalf("explicit broker: %+v %v", a, err)
	}
}

func TestAgentListPaginates(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	const n = 120
	for i := range n {
		name := fmt.Sprintf("a%03d", i)
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("cursor never ends")
		}
		l, err := e.Admin.ListAgents(ctx, client.AgentFilter{Project: "default"}, cursor, 50)
		if err != nil {
			t.Fatal(err)
		}
		if l.Total != n {
			t.Fatalf("total %d, want %d", l.Total, n)
		}
		for _, a := range l.Items {
			if seen[a.ID] {
				t.Fatalf("agent %s listed twice", a.Slug)
			}
			seen[a.ID] = true
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(seen) != n {
		t.Fatalf("saw %d agents, want %d", len(seen), n)
	}
}

func TestJoinTokenIsSingleUse(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	jt, err := e.Admin.CreateJoinToken(ctx, api.CreateJoinTokenRequest{Name: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	anon := client.New(e.URL, "")
	creds, err := anon.JoinBroker(ctx, jt.Token, "laptop")
	if err != nil || creds.BrokerID == "" || creds.Secret == "" {
		t.Fatalf("join: %+v %v", creds, err)
	}
	_, err = anon.JoinBroker(ctx, jt.Token, "laptop2")
	apiErr(t, err, 401, api.CodeUnauthorized)
}

func TestWhoamiAndHealth(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	w, err := e.Admin.Whoami(context.Background())
	if err != nil || w.Kind != "user" || w.Role != api.RoleAdmin {
		t.Fatalf("whoami %+v %v", w, err)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(e.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, resp, err)
		}
		resp.Body.Close()
	}
}
