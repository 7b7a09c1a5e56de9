package hub_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// TestAccessLog: every answer names its request (X-Request-Id), the CLI's
// client gets that ID with an error, and the Hub logs one line per
// request with the ID, route, status and caller, never the query string;
// a client's own plain ID is kept and a forged one (spaces to fake a
// log line) is replaced.
func TestAccessLog(t *testing.T) {
	logs := &syncBuffer{}
	e := testenv.New(t, testenv.Options{LogTo: logs})
	ctx := context.Background()

	_, err := e.Admin.GetAgent(ctx, "ghost", "default")
	ae, ok := err.(*api.Error)
	if !ok || ae.Code != api.CodeAgentNotFound || len(ae.RequestID) != 24 {
		t.Fatalf("GetAgent(ghost): %#v; want agent_not_found with the answer's request ID", err)
	}
	line := logLine(t, logs.String(), "request_id="+ae.RequestID)
	for _, want := range []string{"msg=request", "method=GET", `route="GET /api/v1/agents/{agent}"`, "status=404", "caller=user:"} {
		if !strings.Contains(line, want) {
			t.Errorf("access log line lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "project=") || strings.Contains(line, "?") {
		t.Errorf("the access log line holds the query string:\n%s", line)
	}

	for id, kept := range map[string]bool{"lb-7f3a.91": true, "x msg=forged": false, strings.Repeat("a", 65): false} {
		req, _ := http.NewRequest(http.MethodGet, e.URL+"/healthz", nil)
		req.Header.Set(api.HeaderRequestID, id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get(api.HeaderRequestID)
		if kept != (got == id) || got == "" {
			t.Errorf("client ID %q: answered %q (kept %v)", id, got, kept)
		}
	}
	if strings.Contains(logs.String(), "msg=forged") {
		t.Error("a forged request ID reached the log")
	}
	// Unauthenticated: logged with no caller.
	anon := client.New(e.URL, "")
	if _, err := anon.ListAllProjects(ctx); err == nil {
		t.Fatal("an anonymous list was answered")
	} else if ae, ok := err.(*api.Error); ok {
		line := logLine(t, logs.String(), "request_id="+ae.RequestID)
		if !strings.Contains(line, "status=401") || !strings.Contains(line, `caller=""`) {
			t.Errorf("anonymous request's line:\n%s", line)
		}
	}
}

func logLine(t *testing.T, logs, has string) string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, has) && strings.Contains(l, "msg=request") {
			return l
		}
	}
	t.Fatalf("no access log line with %s in:\n%s", has, logs)
	return ""
}
