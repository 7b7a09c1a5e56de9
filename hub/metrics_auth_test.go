package hub_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// getMetrics reads /metrics with token ("" for none) and returns the
// status, the body and the error code of an error body.
func getMetrics(t *testing.T, e *testenv.Env, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb api.ErrorBody
	code := ""
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil {
		code = eb.Error.Code
	}
	return resp.StatusCode, string(b), code
}

// TestMetricsNeedAScrapeTokenOrAnAdmin: /metrics (whose scion_jobs_total
// names clusters only some profiles offer) answers an anonymous caller
// 401 and a member, a viewer or an agent 403 with the standard error;
// a Hub admin and a scrape token an admin made read it. A scrape token
// reads nothing else, dies when revoked, and stops working when its
// creator is no longer an admin (issue 27, item 6).
func TestMetricsNeedAScrapeTokenOrAnAdmin(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if st, body, code := getMetrics(t, e, ""); st != 401 || code != api.CodeUnauthorized || strings.Contains(body, "scion_") {
		t.Fatalf("anonymous: %d %s", st, body)
	}
	for name, tok := range map[string]string{
		"a member": e.UserToken(t, "mem", api.RoleMember), "a viewer": e.UserToken(t, "vie", api.RoleViewer),
		"an agent": agentToken(t, e, a.ID),
	} {
		if st, body, code := getMetrics(t, e, tok); st != 403 || code != api.CodeForbidden || strings.Contains(body, "scion_") {
			t.Errorf("%s: %d %s", name, st, body)
		}
	}
	if st, body, _ := getMetrics(t, e, e.AdminToken); st != 200 || !strings.Contains(body, "scion_http_requests_total") {
		t.Fatalf("the admin: %d %s", st, body)
	}

	// A scrape token: /metrics only.
	mt, err := e.Admin.CreateMetricsToken(ctx, api.CreateMetricsTokenRequest{Name: "prometheus"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(mt.Token, "scm_") || mt.ExpiresAt == nil {
		t.Fatalf("scrape token %+v", mt)
	}
	if st, body, _ := getMetrics(t, e, mt.Token); st != 200 || !strings.Contains(body, "scion_brokers_connected") {
		t.Fatalf("the scrape token: %d %s", st, body)
	}
	for _, call := range []func(*client.Client) error{
		func(c *client.Client) error { _, err := c.Whoami(ctx); return err },
		func(c *client.Client) error { _, err := c.GetSettings(ctx); return err },
		func(c *client.Client) error { _, err := c.ListMetricsTokens(ctx); return err },
	} {
		apiErr(t, call(client.New(e.URL, mt.Token)), 401, api.CodeUnauthorized)
	}
	ts, err := e.Admin.ListMetricsTokens(ctx)
	if err != nil || len(ts) != 1 || ts[0].ID != mt.ID || ts[0].Token != "" {
		t.Fatalf("list: %+v %v", ts, err)
	}
	if ats, err := e.Admin.ListAccessTokens(ctx); err != nil || len(ats) != 0 {
		t.Fatalf("a scrape token listed as an access token: %+v %v", ats, err)
	}
	if err := e.Admin.RevokeMetricsToken(ctx, mt.ID); err != nil {
		t.Fatal(err)
	}
	if st, _, code := getMetrics(t, e, mt.Token); st != 401 || code != api.CodeUnauthorized {
		t.Fatalf("a revoked scrape token: %d %s", st, code)
	}
	if st, _, _ := getMetrics(t, e, "scm_forged"); st != 401 {
		t.Fatalf("a forged scrape token: %d", st)
	}
	// Only an admin makes one; a creator demoted takes its tokens' access along.
	_, err = client.New(e.URL, e.UserToken(t, "mem", api.RoleMember)).CreateMetricsToken(ctx, api.CreateMetricsTokenRequest{Name: "x"})
	apiErr(t, err, 403, api.CodeForbidden)
	adm2 := client.New(e.URL, e.UserToken(t, "adm2", api.RoleAdmin))
	mt2, err := adm2.CreateMetricsToken(ctx, api.CreateMetricsTokenRequest{Name: "p2", ExpiresIn: "24h"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _ := getMetrics(t, e, mt2.Token); st != 200 {
		t.Fatalf("the second admin's scrape token: %d", st)
	}
	if _, err := e.Admin.SetUserRole(ctx, "adm2", api.RoleMember); err != nil {
		t.Fatal(err)
	}
	if st, _, code := getMetrics(t, e, mt2.Token); st != 403 || code != api.CodeForbidden {
		t.Fatalf("a scrape token of a demoted admin: %d %s", st, code)
	}
	e.NeverLogged(mt.Token, mt2.Token)
}
