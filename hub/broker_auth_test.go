package hub_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

const connectPath = "/api/v1/runtime-brokers/connect"

// connectWith opens the control channel with the given signed headers and
// sends a hello announcing version; it returns the upgrade's status and,
// when refused, the error body.
func connectWith(t *testing.T, e *testenv.Env, brokerID, query string, h http.Header, version string) (int, *api.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.URL, "http") + connectPath
	if query != "" {
		url += "?" + query
	}
	c, resp, err := dialControl(ctx, url, h.Clone(), wire.Options{})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		defer resp.Body.Close()
		var eb api.ErrorBody
		data, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(data, &eb) != nil || eb.Error == nil {
			t.Fatalf("refusal %d without the standard error body: %s", resp.StatusCode, data)
		}
		return resp.StatusCode, eb.Error
	}
	done := make(chan struct{})
	if err := c.Start(ctx, func(error) { close(done) }); err != nil {
		t.Fatal(err)
	}
	var reply wire.HelloReply
	if err := c.Call(ctx, wire.MethodHello, wire.Hello{ProtocolVersion: wire.ProtocolVersion, BrokerID: brokerID, Name: "capt",
		Version: version, Runtime: "fake", Capabilities: []string{}, Inventory: []wire.AgentStatus{}}, &reply); err != nil {
		t.Fatalf("hello: %v", err)
	}
	_ = c.Close("done")
	<-done
	return http.StatusSwitchingProtocols, nil
}

// TestCapturedHandshakeRefusedAfterRestart: a broker's signed upgrade
// request, captured, is refused when replayed to a restarted Hub (a new
// Hub over the same database) within the timestamp window: 401 with the
// standard error body, and its hello is never applied. The nonce lives in
// the database, not in the old process's memory.
func TestCapturedHandshakeRefusedAfterRestart(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		ctx := context.Background()
		creds, err := e.Hub.RegisterBroker(ctx, "capt", "admin", false)
		if err != nil {
			t.Fatal(err)
		}
		e.NeverLogged(creds.Secret)
		captured := http.Header{}
		wire.SignHeaders(captured, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: http.MethodGet, Path: connectPath}, time.Now())
		if st, ae := connectWith(t, e, creds.BrokerID, "", captured, "v-genuine"); st != http.StatusSwitchingProtocols {
			t.Fatalf("genuine upgrade: %d %v", st, ae)
		}
		e.WaitBrokerStatus(creds.BrokerID, api.BrokerOffline) // it closed its channel

		e.RestartHub()
		st, ae := connectWith(t, e, creds.BrokerID, "", captured, "v-replayed")
		if st != http.StatusUnauthorized || ae.Code != api.CodeUnauthorized {
			t.Fatalf("replayed upgrade after a restart: %d %+v, want 401 %s", st, ae, api.CodeUnauthorized)
		}
		b, err := e.Admin.GetBroker(ctx, creds.BrokerID)
		if err != nil || b.Status != api.BrokerOffline || b.Version != "v-genuine" {
			t.Fatalf("broker after the replay: %+v (%v), want offline at v-genuine (the replay's hello not applied)", b, err)
		}

		// The same signature with a query string added is not valid.
		fresh := http.Header{}
		wire.SignHeaders(fresh, creds.BrokerID, []byte(creds.Secret), wire.SignedRequest{Method: http.MethodGet, Path: connectPath}, time.Now())
		if st, ae := connectWith(t, e, creds.BrokerID, "x=1", fresh, "v-query"); st != http.StatusUnauthorized || ae.Code != api.CodeUnauthorized {
			t.Fatalf("signature without the query it was sent with: %d %+v, want 401", st, ae)
		}
		// A broker signing the old way is told to upgrade.
		old := fresh.Clone()
		old.Del(wire.HeaderSignatureVersion)
		st, ae = connectWith(t, e, creds.BrokerID, "", old, "v-old")
		if st != http.StatusUnauthorized || !strings.Contains(ae.Message, "upgrade the runtime broker") {
			t.Fatalf("old signature version: %d %+v, want 401 saying to upgrade", st, ae)
		}
		// A fresh signature still connects (the refusals spent nothing).
		if st, ae := connectWith(t, e, creds.BrokerID, "", fresh, "v-fresh"); st != http.StatusSwitchingProtocols {
			t.Fatalf("fresh upgrade: %d %v", st, ae)
		}
	})
}
