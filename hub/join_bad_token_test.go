package hub_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
)

// TestJoinWithBadTokenTellsNothing: without a valid join token, a join
// is 401 whether or not its name is taken (the token is checked before
// the name), so the public route tells no one which brokers exist.
func TestJoinWithBadTokenTellsNothing(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	anon := client.New(e.URL, "")
	var bodies []string
	for _, name := range []string{"b1", "free-name"} {
		_, err := anon.JoinBroker(ctx, "scj_0000000000000000000000000000000000000000000000", name)
		apiErr(t, err, 401, api.CodeUnauthorized)
		b, _ := json.Marshal(err)
		bodies = append(bodies, string(b))
	}
	if bodies[0] != bodies[1] {
		t.Fatalf("a taken and a free name are answered differently: %s / %s", bodies[0], bodies[1])
	}
}
