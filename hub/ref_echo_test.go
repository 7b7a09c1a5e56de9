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

// TestNotFoundDoesNotEchoHugeRefs: an unknown agent, project or broker
// named by a 30 kB reference is answered 404 with the reference cut short.
func TestNotFoundDoesNotEchoHugeRefs(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	ref := strings.Repeat("a", 30_000)
	short := func(err error, code string) {
		t.Helper()
		apiErr(t, err, http.StatusNotFound, code)
		var ae *api.Error
		if errors.As(err, &ae); len(ae.Message) > 300 {
			t.Fatalf("the %s answer echoes %d bytes", code, len(ae.Message))
		}
	}
	_, err := e.Admin.GetAgent(ctx, ref, "")
	short(err, api.CodeAgentNotFound)
	_, err = e.Admin.GetProject(ctx, ref)
	short(err, api.CodeProjectNotFound)
	_, err = e.Admin.GetBroker(ctx, ref)
	short(err, api.CodeBrokerNotFound)
}
