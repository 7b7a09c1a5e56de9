package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/wire"
)

// TestRefusedCreateFreesItsName: a create the broker refuses (a generic
// harness without a command) leaves the agent in phase error with the
// reason, and the next create with that name and a fixed request gets
// the name, keyed or not.
func TestRefusedCreateFreesItsName(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	for _, key := range []string{"", client.NewIdempotencyKey()} {
		name := "plain"
		if key != "" {
			name = "keyed"
		}
		bad := api.CreateAgentRequest{Name: name, Project: "default", Start: true}
		status, body := post(t, e, "/agents", key, bad)
		var eb api.ErrorBody
		if status != http.StatusBadRequest || json.Unmarshal(body, &eb) != nil || eb.Error.Code != api.CodeInvalidRequest {
			t.Fatalf("create without a command: %d %s, want 400 from the broker", status, body)
		}
		failed, err := e.Admin.GetAgent(ctx, name, "default")
		if err != nil || failed.Phase != api.PhaseError || failed.StatusMessage == "" {
			t.Fatalf("refused agent: %+v (%v), want it in phase error with the reason", failed, err)
		}
		fixed := bad
		fixed.Command = []string{"x"}
		status, body = post(t, e, "/agents", client.NewIdempotencyKey(), fixed)
		var a api.Agent
		if status != http.StatusCreated || json.Unmarshal(body, &a) != nil || a.Phase != api.PhaseRunning || a.ID == failed.ID {
			t.Fatalf("create %q again with a command: %d %s, want 201 running (a new agent)", name, status, body)
		}
		if _, err := e.Admin.GetAgent(ctx, failed.ID, ""); err == nil {
			t.Fatalf("the refused agent %s is still there", failed.ID)
		}
	}
	// Nor by a caller who may not delete the refused agent: a member
	// who is not its delegator, in a project of the admin's.
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "admins", Project: "default"}); err == nil {
		t.Fatal("a create without a command succeeded")
	}
	member := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	_, err := member.CreateAgent(ctx, api.CreateAgentRequest{Name: "admins", Project: "default", Command: []string{"x"}})
	apiErr(t, err, http.StatusConflict, api.CodeAlreadyExists)
	// A name held by an agent that ran is not taken over.
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "plain", Project: "default", Command: []string{"x"}}); err == nil {
		t.Fatal("a create took the name of an agent that exists on its broker")
	} else {
		apiErr(t, err, http.StatusConflict, api.CodeAlreadyExists)
	}
	if n := runningAgents(t, e, e.Brokers()[0].ID); n != 2 {
		t.Fatalf("%d slots held, want 2", n)
	}
}

// TestRefusedCreateLinksNothing: the cascade's auto-link is written with
// the agent, so a create refused for its profile, its quota or the
// caller's access to the project links no broker.
func TestRefusedCreateLinksNothing(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1, Profiles: map[string][]wire.Profile{"b1": {{Name: "small", Runtime: "fake", Default: true}}}})
	ctx := context.Background()
	p, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "fresh"})
	if err != nil {
		t.Fatal(err)
	}
	noLinks := func(what string) {
		t.Helper()
		got, err := e.Store.ProjectProviders(ctx, p.ID)
		if err != nil || len(got) != 0 {
			t.Fatalf("after %s: project providers %v (%v), want none", what, got, err)
		}
	}
	// An explicit broker that does not serve the project yet, with update
	// access (the admin): linking it is allowed, but the create is refused.
	_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "p1", Project: p.ID, Broker: "b1", Profile: "huge", Command: []string{"x"}})
	apiErr(t, err, http.StatusConflict, api.CodeProfileNotAvailable)
	noLinks("a refused profile")

	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "holder", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "q1", Project: p.ID, Broker: "b1", Start: true, Command: []string{"x"}})
	apiErr(t, err, http.StatusTooManyRequests, api.CodeQuotaExceeded)
	noLinks("a refused quota")

	// Level 2: the project's default broker does not serve it, and a
	// member who does not own the project may not link it.
	if _, err := e.Admin.UpdateProject(ctx, p.ID, api.UpdateProjectRequest{DefaultBroker: ptr("b1")}); err != nil {
		t.Fatal(err)
	}
	member := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
	_, err = member.CreateAgent(ctx, api.CreateAgentRequest{Name: "m1", Project: p.ID, Command: []string{"x"}})
	apiErr(t, err, http.StatusForbidden, api.CodeBrokerNotProvider)
	noLinks("a member's create through the project default")

	// The owner's (the admin's) create through level 2 links it, once
	// there is room.
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a1", Project: p.ID, Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Store.ProjectProviders(ctx, p.ID); len(got) != 1 || got[0] != e.Brokers()[0].ID {
		t.Fatalf("providers after the admin's create: %v, want b1", got)
	}
}

// TestStartCreatesAgainAnAgentWhoseCreateFailed: an agent whose create
// failed on the broker (nothing of it there) is created by its start.
func TestStartCreatesAgainAnAgentWhoseCreateFailed(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	rt := e.Brokers()[0].Runtime
	rt.FailNext("Create", errors.New("disk full"))
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "again", Project: "default", Start: true, Command: []string{"x"}})
	apiErr(t, err, http.StatusBadGateway, api.CodeRuntimeError)
	failed, err := e.Admin.GetAgent(ctx, "again", "default")
	if err != nil || failed.Phase != api.PhaseError {
		t.Fatalf("failed agent: %+v (%v)", failed, err)
	}
	started, err := e.Admin.AgentAction(ctx, "again", "default", "start")
	if err != nil || started.Phase != api.PhaseRunning || started.ID != failed.ID {
		t.Fatalf("start of an agent whose create failed: %+v (%v), want it running", started, err)
	}
	if n := rt.Calls("Create"); n != 2 {
		t.Fatalf("runtime saw %d creates, want 2", n)
	}
	if n := runningAgents(t, e, e.Brokers()[0].ID); n != 1 {
		t.Fatalf("%d slots held, want 1", n)
	}
	// A stop and a start now work on the container as usual.
	if _, err := e.Admin.AgentAction(ctx, "again", "default", "stop"); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Admin.AgentAction(ctx, "again", "default", "start"); err != nil || got.Phase != api.PhaseRunning {
		t.Fatalf("second start: %+v (%v)", got, err)
	}
	if n := rt.Calls("Create"); n != 2 {
		t.Fatalf("runtime saw %d creates after a plain start, want 2", n)
	}
}

// addrInMessage finds an address a transport error would name.
var addrInMessage = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|\[[0-9a-f:]+\]:\d+|localhost:\d+|\.sock`)

// TestKeyedCreateAfterBrokerLoss: the broker goes away with a keyed
// create unanswered and stays away past the dispatch deadline: the answer
// is 503 (naming no address) and is not stored. Once the broker is back,
// the retry with the same key answers with what really happened: the
// agent the broker made before it went (it reports it), or, when it had
// made nothing, the agent made now, once.
func TestKeyedCreateAfterBrokerLoss(t *testing.T) {
	for _, made := range []bool{true, false} {
		name := map[bool]string{true: "made before the loss", false: "nothing made"}[made]
		t.Run(name, func(t *testing.T) {
			reached := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			e := testenv.New(t, testenv.Options{Brokers: 1, DispatchTimeout: time.Second,
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
				DropReply: func(_, method, _ string) bool {
					first := false
					if method == wire.MethodAgentCreate {
						once.Do(func() { first = true })
					}
					if first {
						close(reached)
						<-release // until the broker is gone
					}
					return first
				}})
			ctx := context.Background()
			b := e.Brokers()[0]
			rt := b.Runtime
			if !made {
				// The create is still in the runtime when the broker goes:
				// its context ends and nothing is made.
				rt.SetLatency("Create", time.Minute)
			}
			req := api.CreateAgentRequest{Name: "lost", Project: "default", Start: true, Command: []string{"x"}}
			key := client.NewIdempotencyKey()
			type answer struct {
				status int
				body   []byte
			}
			first := make(chan answer, 1)
			go func() {
				st, body := post(t, e, "/agents", key, req)
				first <- answer{st, body}
			}()
			if made {
				<-reached
			} else {
				wait.Eventually(t, 5*time.Second, wait.Interval, func() error {
					if rt.Calls("Create") == 0 {
						return errors.New("create not in the runtime yet")
					}
					return nil
				})
			}
			e.StopBroker(b)
			close(release)
			ans := <-first
			var eb api.ErrorBody
			if ans.status != http.StatusServiceUnavailable || json.Unmarshal(ans.body, &eb) != nil ||
				(eb.Error.Code != api.CodeBrokerUnavailable && eb.Error.Code != api.CodeBrokerOffline) {
				t.Fatalf("create with the broker gone: %d %s, want 503", ans.status, ans.body)
			}
			if addrInMessage.MatchString(eb.Error.Message) {
				t.Fatalf("503 message names an internal address: %q", eb.Error.Message)
			}
			// With the broker away the retry cannot know either: 503 again.
			if st, body := post(t, e, "/agents", key, req); st != http.StatusServiceUnavailable {
				t.Fatalf("retry with the broker away: %d %s, want 503", st, body)
			}

			rt2 := rt.Restart()
			e.StartBroker(b, rt2)
			st, body := post(t, e, "/agents", key, req)
			var a api.Agent
			if st != http.StatusCreated || json.Unmarshal(body, &a) != nil || a.Slug != "lost" || a.Phase != api.PhaseRunning {
				t.Fatalf("retry with the broker back: %d %s, want 201 running", st, body)
			}
			if st2, body2 := post(t, e, "/agents", key, req); st2 != http.StatusCreated || string(body2) != string(body) {
				t.Fatalf("second retry: %d %s, want the stored %s", st2, body2, body)
			}
			inv, err := rt2.Inventory(ctx)
			if err != nil || len(inv) != 1 || inv[0].AgentID != a.ID {
				t.Fatalf("containers %+v (%v), want exactly agent %s's", inv, err, a.ID)
			}
			list, err := e.Admin.ListAgents(ctx, client.AgentFilter{}, "", 0)
			if err != nil || list.Total != 1 {
				t.Fatalf("agents %+v (%v), want one", list, err)
			}
			if n := runningAgents(t, e, b.ID); n != 1 {
				t.Fatalf("%d slots held, want 1", n)
			}
		})
	}
}

// TestKeyedRetryRefusedForQuotaIsNotStored: a keyed create that failed on
// the broker (502, not stored) is sent again by its retry; a retry that
// finds the broker full is refused (429) without storing that either, and
// the retry after a slot is freed creates the agent.
func TestKeyedRetryRefusedForQuotaIsNotStored(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 1}); err != nil {
		t.Fatal(err)
	}
	rt := e.Brokers()[0].Runtime
	rt.FailNext("Create", errors.New("disk full"))
	req := api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}}
	key := client.NewIdempotencyKey()
	if st, body := post(t, e, "/agents", key, req); st != http.StatusBadGateway {
		t.Fatalf("first create: %d %s, want 502", st, body)
	}
	holder, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "holder", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if st, body := post(t, e, "/agents", key, req); st != http.StatusTooManyRequests {
		t.Fatalf("retry with the broker full: %d %s, want 429", st, body)
	}
	if err := e.Admin.DeleteAgent(ctx, holder.ID, ""); err != nil {
		t.Fatal(err)
	}
	st, body := post(t, e, "/agents", key, req)
	var a api.Agent
	if st != http.StatusCreated || json.Unmarshal(body, &a) != nil || a.Phase != api.PhaseRunning || a.Slug != "k" {
		t.Fatalf("retry with room: %d %s, want 201 running", st, body)
	}
	if n := rt.Calls("Create"); n != 3 { // the failed one, holder, the retry
		t.Fatalf("runtime saw %d creates, want 3", n)
	}
}

// TestKeyedCreateBrokerBusyIsNotStored: a broker that answers a keyed
// create with 429 (its runtime or its channel busy: retry later) did not
// refuse the request for good. The answer is not stored for the key, so
// the retry with the same key creates the agent, as the broker's own
// record of keyed commands does not keep a 429 either.
func TestKeyedCreateBrokerBusyIsNotStored(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	rt := e.Brokers()[0].Runtime
	rt.FailNext("Create", api.Errorf(api.CodeRateLimited, "the runtime is busy; retry later"))
	req := api.CreateAgentRequest{Name: "k", Project: "default", Start: true, Command: []string{"x"}}
	key := client.NewIdempotencyKey()
	if st, body := post(t, e, "/agents", key, req); st != http.StatusTooManyRequests {
		t.Fatalf("first create: %d %s, want the broker's 429", st, body)
	}
	st, body := post(t, e, "/agents", key, req)
	var a api.Agent
	if st != http.StatusCreated || json.Unmarshal(body, &a) != nil || a.Phase != api.PhaseRunning || a.Slug != "k" {
		t.Fatalf("retry once the broker has room: %d %s, want 201 running", st, body)
	}
}
