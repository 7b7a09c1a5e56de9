package hub_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// TestActionKeyIsPerAgent: an Idempotency-Key on an agent action makes a
// retry of that action on that agent run once; the same key on another
// agent is another request. Answering it from the first agent's record
// would mark the second stopped (its slot released) while it runs on.
func TestActionKeyIsPerAgent(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	for _, name := range []string{"one", "two"} {
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	rt := e.Brokers()[0].Runtime
	key := client.NewIdempotencyKey()
	for _, name := range []string{"one", "one", "two"} {
		if status, body := post(t, e, "/agents/"+name+"/stop?project=default", key, nil); status != http.StatusOK {
			t.Fatalf("stop %s: %d %s", name, status, body)
		}
	}
	if n := rt.Calls("Stop"); n != 2 {
		t.Fatalf("runtime saw %d stops, want 2 (one per agent)", n)
	}
	if n := runningAgents(t, e, e.Brokers()[0].ID); n != 0 {
		t.Fatalf("%d slots held after both stops", n)
	}
	// A key is bounded as on a create: it is kept with a queued stop and
	// in the broker's record of keys.
	if status, body := post(t, e, "/agents/one/start?project=default", strings.Repeat("k", 256), nil); status != http.StatusBadRequest {
		t.Fatalf("start with a 256-byte key: %d %s, want 400", status, body)
	}
	if n := runningAgents(t, e, e.Brokers()[0].ID); n != 0 {
		t.Fatalf("a refused start holds %d slots", n)
	}
}
