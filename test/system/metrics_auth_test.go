package system

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
)

// TestMetricsBehindAScrapeToken (issue 27, item 6) against the real
// binary: a team Hub's /metrics answers an anonymous caller 401; the
// scrape token an admin makes with `scion hub metrics-tokens create`
// reads it and nothing else, until `revoke`.
func TestMetricsBehindAScrapeToken(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	get := func(path, tok string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, hub.URL+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get("/metrics", ""); st != 401 || !strings.Contains(body, `"unauthorized"`) || strings.Contains(body, "scion_") {
		t.Fatalf("anonymous /metrics: %d %s", st, body)
	}
	scrape := strings.TrimSpace(admin.mustScion(t, "hub", "metrics-tokens", "create", "--name", "prometheus"))
	if !strings.HasPrefix(scrape, "scm_") {
		t.Fatalf("metrics-tokens create printed %q", scrape)
	}
	if st, body := get("/metrics", scrape); st != 200 || !strings.Contains(body, "scion_http_requests_total") {
		t.Fatalf("/metrics with the scrape token: %d %.200s", st, body)
	}
	if st, body := get("/api/v1/auth/whoami", scrape); st != 401 {
		t.Fatalf("the scrape token on an API route: %d %s", st, body)
	}
	var listed []api.MetricsToken
	admin.mustScionJSON(t, &listed, "hub", "metrics-tokens", "list")
	if len(listed) != 1 || listed[0].Name != "prometheus" || listed[0].Token != "" {
		t.Fatalf("metrics-tokens list: %+v", listed)
	}
	admin.mustScion(t, "hub", "metrics-tokens", "revoke", listed[0].ID)
	if st, _ := get("/metrics", scrape); st != 401 {
		t.Fatalf("/metrics with the revoked scrape token: %d", st)
	}
}
