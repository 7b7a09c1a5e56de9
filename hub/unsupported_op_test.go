package hub_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestBrokerUnsupportedOperationIs501: an operation the agent's runtime
// cannot do (Kubernetes cannot suspend) is the broker's 501
// unsupported_operation, and the Hub's caller gets exactly that through
// the control channel, not the 502 of a runtime failure; the agent is
// left as it was.
func TestBrokerUnsupportedOperationIs501(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	e.Brokers()[0].Runtime.FailNext("Suspend", fmt.Errorf("kubernetes runtime: suspend and resume are not supported: %w", errors.ErrUnsupported))
	_, err := e.Admin.AgentAction(ctx, "k", "default", "suspend")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusNotImplemented || ae.Code != api.CodeUnsupportedOperation {
		t.Fatalf("suspend: %v (%+v), want 501 %s", err, ae, api.CodeUnsupportedOperation)
	}
	a, err := e.Admin.GetAgent(ctx, "k", "default")
	if err != nil || a.Phase != api.PhaseRunning {
		t.Fatalf("after the refused suspend: %+v, %v; want it running", a, err)
	}
}
