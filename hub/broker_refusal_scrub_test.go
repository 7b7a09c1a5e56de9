package hub_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// TestBrokerRefusalsNameNoAddress: a broker's refusal (4xx) passes
// through the Hub with the internal addresses in its runtime's words
// scrubbed, as its failures (5xx) do: in a create's answer and its keyed
// replay, a start's and an exec's. The Hub's own refusals keep what they
// quote of the caller's input.
func TestBrokerRefusalsNameNoAddress(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	rt := e.Brokers()[0].Runtime
	const leak = "image registry.internal.example:5000/team/x: pull refused by 10.20.30.40:5000"
	refusal := func() error { return api.BadRequest("%s", leak) }
	check := func(what string, err error) {
		t.Helper()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != api.CodeInvalidRequest {
			t.Fatalf("%s: got %v, want the broker's 400 %s", what, err, api.CodeInvalidRequest)
		}
		if strings.Contains(ae.Message, "10.20.30.40") || strings.Contains(ae.Message, "registry.internal.example:5000") ||
			!strings.Contains(ae.Message, "pull refused by") {
			t.Errorf("%s: message %q, want the broker's words with no address", what, ae.Message)
		}
	}

	rt.FailNext("Create", refusal())
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}})
	check("create", err)

	// A keyed create's refusal is stored as it was answered.
	kctx := client.WithIdempotencyKey(ctx, "refused-create")
	rt.FailNext("Create", refusal())
	_, err = e.Admin.CreateAgent(kctx, api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}})
	check("keyed create", err)
	_, err = e.Admin.CreateAgent(kctx, api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}})
	check("keyed create replayed", err)

	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	rt.FailNext("Start", refusal())
	_, err = e.Admin.AgentAction(ctx, "w", "default", "start")
	check("start", err)
	if _, err := e.Admin.AgentAction(ctx, "w", "default", "start"); err != nil {
		t.Fatal(err)
	}
	rt.FailNext("Exec", refusal())
	_, err = e.Admin.Exec(ctx, "w", "default", api.ExecRequest{Command: []string{"echo"}}, io.Discard, io.Discard)
	check("exec", err)

	// The Hub's own refusal quotes the caller's reference as it was given.
	_, err = e.Admin.PutSettings(ctx, api.HubSettings{AgentDefaults: api.AgentDefaults{DefaultRuntimeBroker: "gpu.example:8080"}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeBrokerNotFound || !strings.Contains(ae.Message, "gpu.example:8080") {
		t.Errorf("the Hub's own 404: %v, want it to quote gpu.example:8080", err)
	}
}
