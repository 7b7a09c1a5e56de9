package hub_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// TestKeyedRetryWithBrokerDeregistered: a keyed create whose outcome is
// still open when its broker is deregistered (with force) is answered
// like every other operation that needs that broker: 409
// runtime_broker_missing, not stored.
func TestKeyedRetryWithBrokerDeregistered(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	b := e.Brokers()[0]
	b.Runtime.FailNext("Create", errors.New("disk full"))
	req := api.CreateAgentRequest{Name: "k", Project: "default", Command: []string{"x"}}
	key := client.NewIdempotencyKey()
	if st, body := post(t, e, "/agents", key, req); st != http.StatusBadGateway {
		t.Fatalf("create: %d %s, want 502", st, body)
	}
	if err := e.Admin.ForceDeregisterBroker(t.Context(), b.ID); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		st, body := post(t, e, "/agents", key, req)
		var eb api.ErrorBody
		if st != http.StatusConflict || json.Unmarshal(body, &eb) != nil || eb.Error.Code != api.CodeBrokerMissing {
			t.Fatalf("retry: %d %s, want 409 %s", st, body, api.CodeBrokerMissing)
		}
	}
}
