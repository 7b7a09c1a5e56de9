package hub

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

func TestClassifyCreate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want createOutcome
	}{
		{"answered", nil, outcomeCreated},
		{"refused by the broker", api.BadRequest("harness generic needs a command"), outcomeRefused},
		{"failed on the broker", api.Errorf(api.CodeRuntimeError, "disk full"), outcomeRefused},
		{"port pool exhausted", api.Errorf(api.CodePortPoolExhausted, "no ports"), outcomeRefused},
		{"already there", api.Conflict(api.CodeAlreadyExists, "exists"), outcomeExists},
		{"channel lost", api.Errorf(api.CodeBrokerUnavailable, "control channel closed"), outcomeUnknown},
		{"broker offline", api.Errorf(api.CodeBrokerOffline, "offline"), outcomeUnknown},
		{"deadline", api.Errorf(api.CodeBrokerTimeout, "deadline exceeded"), outcomeUnknown},
		{"request canceled", context.Canceled, outcomeUnknown},
	}
	for _, tt := range tests {
		if got := classifyCreate(tt.err); got != tt.want {
			t.Errorf("%s: classifyCreate = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestNoContainerAndUnresolved(t *testing.T) {
	tests := []struct {
		name                 string
		phase, container     string
		noContainer, pending bool
	}{
		{"refused create", api.PhaseError, "", true, true},
		{"inventory found it missing", api.PhaseError, api.ContainerMissing, true, true},
		{"create unanswered", api.PhaseProvisioning, "", false, true},
		{"provisioning with a container", api.PhaseProvisioning, api.ContainerCreated, false, false},
		{"exited with an error", api.PhaseError, api.ContainerExited, false, false},
		{"running", api.PhaseRunning, api.ContainerRunning, false, false},
		{"stopped, container gone", api.PhaseStopped, api.ContainerMissing, false, false},
	}
	for _, tt := range tests {
		a := &store.Agent{Phase: tt.phase, ContainerStatus: tt.container}
		if got := plan.NoContainer(a); got != tt.noContainer {
			t.Errorf("%s: noContainer = %v, want %v", tt.name, got, tt.noContainer)
		}
		if got := createUnresolved(a); got != tt.pending {
			t.Errorf("%s: createUnresolved = %v, want %v", tt.name, got, tt.pending)
		}
	}
}

func TestFinalAnswer(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{api.BadRequest("no command"), true},
		{api.Conflict(api.CodeAlreadyExists, "taken"), true},
		{api.Errorf(api.CodeRuntimeError, "disk full"), false},
		{api.Errorf(api.CodeBrokerUnavailable, "lost"), false},
		{errors.New("database is locked"), false},
	} {
		if got := finalAnswer(tt.err); got != tt.want {
			t.Errorf("finalAnswer(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// realDialError is the error a dial to a closed loopback port gives, and
// that port's address, which the error names.
func realDialError(t *testing.T) (string, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	d := net.Dialer{Timeout: time.Second}
	_, err = d.DialContext(context.Background(), "tcp", addr)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("a dial to a closed loopback port gave no error naming %s: %v", addr, err)
	}
	return addr, err
}

// TestTransportErrorReachesTheAPIWithoutAddress: a transport error's text
// that reaches an error answer, or an agent's status message, names no
// host:port.
func TestTransportErrorReachesTheAPIWithoutAddress(t *testing.T) {
	// The Hub records a broker's answer here outside any request: as the
	// system, as its own work does (hub/authstore).
	ctx := authstore.AsSystem(context.Background())
	s, st := newInternalServer(t)
	addr, dialErr := realDialError(t)
	for _, code := range []string{api.CodeBrokerUnavailable, api.CodeBrokerOffline, api.CodeRuntimeError} {
		e := api.Errorf(code, "control channel closed: %v", dialErr)
		rec := httptest.NewRecorder()
		httpapi.WriteError(s.log, rec, httptest.NewRequest(http.MethodPost, "/api/v1/agents", nil), e)
		var eb api.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Code != code {
			t.Fatalf("%s: answer %d %s", code, rec.Code, rec.Body)
		}
		if rec.Code != e.Status || strings.Contains(rec.Body.String(), addr) || addrLike.MatchString(eb.Error.Message) {
			t.Errorf("%s: answer %d %s names the address %s", code, rec.Code, rec.Body, addr)
		}
	}

	projectID, err := s.EnsureProject(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	a := &store.Agent{Slug: "cut", ProjectID: projectID, Harness: "generic", Phase: api.PhaseRunning, Generation: 1, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateAgent(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	derr := api.Errorf(api.CodeBrokerUnavailable, "control channel closed: %v", dialErr)
	got, err := s.afterDispatch(ctx, a.ID, wire.AgentStatus{}, derr, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != api.PhaseError || got.StatusMessage == "" || strings.Contains(got.StatusMessage, addr) || addrLike.MatchString(got.StatusMessage) {
		t.Fatalf("status message %q (phase %s) names the address %s", got.StatusMessage, got.Phase, addr)
	}
}
