package hub_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

// brokerGet sends a GET signed as broker id with secret and returns the
// status.
func brokerGet(t *testing.T, e *testenv.Env, id string, secret []byte) int {
	t.Helper()
	path := "/api/v1/runtime-brokers/" + id
	req, _ := http.NewRequest(http.MethodGet, e.URL+path, nil)
	wire.SignHeaders(req.Header, id, secret, wire.SignedRequest{Method: http.MethodGet, Path: path}, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// forgeAgentToken re-signs the claims of a real agent token with key, as
// someone holding a copy of the database would try.
func forgeAgentToken(real string, key []byte) string {
	body := strings.TrimPrefix(real, "sca_")
	p, _, _ := strings.Cut(body, ".")
	m := hmac.New(sha256.New, key)
	m.Write([]byte(p))
	return "sca_" + p + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// TestDatabaseCopyMintsNothing: the database (a SQLite file or a
// PostgreSQL dump) holds the agent-token signing
// key and the broker secrets sealed with the secrets key (a file outside
// it), so what a copy of hub.db holds neither signs an agent token nor a
// broker request (issue 12, item 6).
func TestDatabaseCopyMintsNothing(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) { databaseCopyMintsNothing(t, pg) })
}

func databaseCopyMintsNothing(t *testing.T, pg bool) {
	e := testenv.New(t, testenv.Options{Postgres: pg, Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	a, err := e.Admin.GetAgent(ctx, "a", "default")
	if err != nil {
		t.Fatal(err)
	}
	real := agentToken(t, e, a.ID)
	if _, err := client.New(e.URL, real).Whoami(ctx); err != nil {
		t.Fatalf("the real agent token works: %v", err)
	}
	stored, err := e.Store.GetSetting(ctx, "agent_token_key")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(stored, []byte("sealed:")) {
		t.Fatalf("the agent-token key is stored plain")
	}
	for _, k := range [][]byte{stored, bytes.TrimPrefix(stored, []byte("sealed:v1:"))} {
		_, err := client.New(e.URL, forgeAgentToken(real, k)).Whoami(ctx)
		apiErr(t, err, 401, api.CodeUnauthorized)
	}

	b := e.Brokers()[0]
	rec, err := e.Store.GetBroker(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(rec.Secret, []byte(b.Secret)) {
		t.Fatal("the broker secret is stored plain")
	}
	if got := brokerGet(t, e, b.ID, []byte(b.Secret)); got != http.StatusOK {
		t.Fatalf("the broker's own secret: %d, want 200", got)
	}
	if got := brokerGet(t, e, b.ID, rec.Secret); got != http.StatusUnauthorized {
		t.Fatalf("the stored secret signs a request: %d, want 401", got)
	}
}
