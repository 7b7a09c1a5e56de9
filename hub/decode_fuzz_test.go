package hub

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/httpapi"
)

// FuzzDecodeRequests feeds arbitrary bodies to the request decoder and the
// validators of every request type: they must never panic, and anything
// they refuse must be a typed 4xx error.
func FuzzDecodeRequests(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","project":"default","start":true,"command":["sh","-c","echo hi"]}`,
		`{"name":"a","env":{"K":"v"},"payload":{"x":[1,2,3]}}`,
		`{"name":"p","gitRemote":"https://example.invalid/r.git","sharingMode":"worktree-per-agent"}`,
		`{"max_agents_per_broker":5}`,
		`{"agent_defaults":{"default_runtime_broker":"b1"}}`,
		`{"autoProvide":true,"settings":{"maxAgents":0}}`,
		`{"name":"x","joinToken":"scj_00"}`,
		`{`, `[]`, `null`, `{"name":1e400}`, "{\"name\":\"\xff\"}", `{"a":{"b":{"c":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		targets := []func() any{
			func() any { return &api.CreateAgentRequest{} },
			func() any { return &api.CreateProjectRequest{} },
			func() any { return &api.UpdateProjectRequest{} },
			func() any { return &api.RegisterBrokerRequest{} },
			func() any { return &api.UpdateBrokerRequest{} },
			func() any { return &api.HubSettings{} },
			func() any { return &api.Limits{} },
			func() any { return &api.CreateJoinTokenRequest{} },
		}
		for _, mk := range targets {
			v := mk()
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, api.MaxRequestBody)
			err := httpapi.DecodeJSON(r, v)
			if err == nil {
				if req, ok := v.(*api.CreateAgentRequest); ok {
					req.WithDefaults()
					err = req.Validate()
				}
			}
			if err != nil {
				e := api.AsError(err)
				if e.Status < 400 || e.Status >= 500 {
					t.Fatalf("decode error is not a 4xx: %d %v", e.Status, err)
				}
			}
		}
	})
}
