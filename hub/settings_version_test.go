package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// putSettingsRaw sends body to PUT /api/v1/settings as the admin, with
// If-Match when ifMatch is not "", and returns the status, the ETag and
// the decoded answer (settings, or the error body's code and details).
func putSettingsRaw(t *testing.T, e *testenv.Env, body, ifMatch string) (int, string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, e.URL+api.Prefix+"/settings", bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+e.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header.Get("ETag"), out
}

func getSettingsETag(t *testing.T, e *testenv.Env) (*api.HubSettings, string) {
	t.Helper()
	s, etag, err := e.Admin.GetSettingsETag(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if etag == "" {
		t.Fatal("GET /api/v1/settings answered no ETag")
	}
	return s, etag
}

// TestSettingsPutIsPartial: a PUT changes what its body names and
// nothing else; a body without experiments leaves them as they are
// (issue 27, item 8: it turned every experiment off).
func TestSettingsPutIsPartial(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		on := fmt.Sprintf(`{"experiments":{%q:true}}`, api.ExperimentFlatRuntimeBrokers)
		if st, _, out := putSettingsRaw(t, e, on, ""); st != 200 {
			t.Fatalf("turning the experiment on: %d %v", st, out)
		}
		if st, _, out := putSettingsRaw(t, e, `{"agent_defaults":{"default_image":"busybox:1"}}`, ""); st != 200 {
			t.Fatalf("setting the image: %d %v", st, out)
		}
		if st, _, out := putSettingsRaw(t, e, `{"agent_defaults":{"default_harness":"generic"}}`, ""); st != 200 {
			t.Fatalf("setting the harness: %d %v", st, out)
		}
		s, _ := getSettingsETag(t, e)
		if !s.Experiments[api.ExperimentFlatRuntimeBrokers] || s.AgentDefaults.DefaultImage != "busybox:1" || s.AgentDefaults.DefaultHarness != "generic" {
			t.Fatalf("after three partial PUTs: %+v", s)
		}
		// "" clears one default; {} changes nothing (and moves no version).
		_, etag := getSettingsETag(t, e)
		st, etag2, _ := putSettingsRaw(t, e, `{}`, etag)
		if st != 200 || etag2 != etag {
			t.Fatalf("an empty PUT: %d, ETag %s (was %s)", st, etag2, etag)
		}
		if st, _, out := putSettingsRaw(t, e, `{"agent_defaults":{"default_image":""}}`, ""); st != 200 {
			t.Fatalf("clearing the image: %d %v", st, out)
		}
		s, _ = getSettingsETag(t, e)
		if s.AgentDefaults.DefaultImage != "" || s.AgentDefaults.DefaultHarness != "generic" || !s.Experiments[api.ExperimentFlatRuntimeBrokers] {
			t.Fatalf("after clearing the image: %+v", s)
		}
		// Refusals still write nothing.
		if st, _, _ := putSettingsRaw(t, e, `{"agent_defaults":{"default_harness":"nope"}}`, ""); st != 400 {
			t.Fatalf("an unknown harness: %d", st)
		}
		if st, _, _ := putSettingsRaw(t, e, `{"experiments":{"hub.typo":true}}`, ""); st != 400 {
			t.Fatalf("an unknown experiment: %d", st)
		}
	})
}

// TestSettingsIfMatch: GET and PUT answer the settings' version as an
// ETag; a PUT with If-Match naming an older one is refused with 412
// precondition_failed, the current ETag in its details, and writes
// nothing.
func TestSettingsIfMatch(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		_, e1 := getSettingsETag(t, e)
		st, e2, out := putSettingsRaw(t, e, `{"agent_defaults":{"default_image":"a:1"}}`, e1)
		if st != 200 || e2 == "" || e2 == e1 {
			t.Fatalf("a PUT at the current version: %d, ETag %q (read %q) %v", st, e2, e1, out)
		}
		if _, g := getSettingsETag(t, e); g != e2 {
			t.Fatalf("GET's ETag %s, the PUT answered %s", g, e2)
		}
		// A second admin who read e1 is refused.
		st, _, out = putSettingsRaw(t, e, `{"agent_defaults":{"default_image":"b:1"}}`, e1)
		errBody, _ := out["error"].(map[string]any)
		details, _ := errBody["details"].(map[string]any)
		if st != 412 || errBody["code"] != api.CodePreconditionFailed || details["etag"] != e2 {
			t.Fatalf("a stale If-Match: %d %v, want 412 %s with etag %s", st, out, api.CodePreconditionFailed, e2)
		}
		for _, bad := range []string{`W/` + e2, `"x"`, `7`} {
			if st, _, _ := putSettingsRaw(t, e, `{"agent_defaults":{"default_image":"b:1"}}`, bad); st != 412 {
				t.Errorf("If-Match %s: %d, want 412", bad, st)
			}
		}
		if s, _ := getSettingsETag(t, e); s.AgentDefaults.DefaultImage != "a:1" {
			t.Fatalf("a refused write wrote: %+v", s)
		}
		if st, _, _ := putSettingsRaw(t, e, `{"agent_defaults":{"default_image":"c:1"}}`, "*"); st != 200 {
			t.Fatalf("If-Match *: %d", st)
		}
	})
}

// TestSettingsConcurrentWritersBothSurvive: two admins writing different
// settings at the same time, each as many times as it likes, both keep
// their last change.
func TestSettingsConcurrentWritersBothSurvive(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		const n = 25
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range n {
				if st, _, out := putSettingsRaw(t, e, fmt.Sprintf(`{"agent_defaults":{"default_image":"img:%d"}}`, i), ""); st != 200 {
					t.Errorf("image writer: %d %v", st, out)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range n {
				on := i%2 == 0 // the last write (i = n-1 = 24) turns it on
				if st, _, out := putSettingsRaw(t, e, fmt.Sprintf(`{"experiments":{%q:%v}}`, api.ExperimentFlatRuntimeBrokers, on), ""); st != 200 {
					t.Errorf("experiment writer: %d %v", st, out)
				}
			}
		}()
		wg.Wait()
		s, _ := getSettingsETag(t, e)
		if s.AgentDefaults.DefaultImage != fmt.Sprintf("img:%d", n-1) || !s.Experiments[api.ExperimentFlatRuntimeBrokers] {
			t.Fatalf("after two concurrent writers: %+v, want image img:%d and the experiment on", s, n-1)
		}
	})
}
