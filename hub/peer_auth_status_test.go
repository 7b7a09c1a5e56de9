package hub_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// TestBrokerCannotAnswerAsTheUsersAuth: the Hub authenticates and
// authorizes the caller; a broker's answer that says 401, 403 or 407 (by
// its status or its code) would read as the caller's own credentials or
// rights failing (the CLI tells an unauthenticated user to sign in). The
// Hub answers it as the broker's failure, 502 runtime_error, with the
// broker's words. A broker's other statuses pass (its 501 stays 501).
func TestBrokerCannotAnswerAsTheUsersAuth(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	rt := e.Brokers()[0].Runtime
	for _, tc := range []struct {
		name string
		err  *api.Error
	}{
		{"status 401", &api.Error{Status: http.StatusUnauthorized, Code: api.CodeRuntimeError, Message: "registry said no"}},
		{"code unauthorized", api.Unauthorized("registry said no")},
		{"code forbidden", api.Forbidden("registry said no")},
		{"status 403, newer code", &api.Error{Status: http.StatusForbidden, Code: "some_newer_code", Message: "registry said no"}},
		{"status 407", &api.Error{Status: http.StatusProxyAuthRequired, Code: api.CodeRuntimeError, Message: "registry said no"}},
	} {
		rt.FailNext("Suspend", tc.err)
		_, err := e.Admin.AgentAction(ctx, "k", "default", "suspend")
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Code != api.CodeRuntimeError ||
			!strings.Contains(ae.Message, "registry said no") {
			t.Errorf("%s: got %v (%+v), want 502 %s with the broker's message", tc.name, err, ae, api.CodeRuntimeError)
		}
	}
	rt.FailNext("Suspend", &api.Error{Status: http.StatusNotImplemented, Code: api.CodeRuntimeError, Message: "no suspend"})
	_, err := e.Admin.AgentAction(ctx, "k", "default", "suspend")
	if ae := api.AsError(err); ae.Status != http.StatusNotImplemented || ae.Code != api.CodeRuntimeError {
		t.Errorf("a broker's 501: got %v (%+v), want it as it was", err, ae)
	}
}
