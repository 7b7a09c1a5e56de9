package wire

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
)

// TestFetchBrokerSecret: the request is a signed GET of the value route
// that the Hub's check accepts; a Hub error is an *api.Error with its
// status; a body that is not the Hub's still is one; an answer past the
// bound or for another name is refused; a bad name is never sent.
func TestFetchBrokerSecret(t *testing.T) {
	const id, name = "0190c3a4-5e6f-7a00-8000-1234567890ab", "SPOKE_KUBECONFIG"
	secret := []byte("broker-secret")
	var answer func(w http.ResponseWriter)
	var sent int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent++
		want := "/prefix/api/v1/runtime-brokers/" + id + "/secrets/" + name + "/value"
		if r.Method != http.MethodGet || r.URL.Path != want {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if _, err := VerifySignature(id, secret, SignedRequest{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery}, r.Header, time.Now(), time.Minute); err != nil {
			t.Errorf("signature: %v", err)
		}
		answer(w)
	}))
	defer srv.Close()
	ctx := context.Background()
	hub := srv.URL + "/prefix/"
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		value  string
		status int
		code   string
	}{
		{"value", func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"name":"SPOKE_KUBECONFIG","value":"a\nb\n"}`)) }, "a\nb\n", 0, ""},
		{"hub error", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"secret_not_found","message":"secret not found"}}`))
		}, "", 404, api.CodeSecretNotFound},
		{"proxy page", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway); _, _ = w.Write([]byte("<html>")) }, "", 502, api.CodeForStatus(502)},
		{"too big", func(w http.ResponseWriter) { _, _ = w.Write([]byte(strings.Repeat(" ", maxBrokerSecretAnswer+1))) }, "", 0, api.CodeRequestTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer = tc.answer
			v, err := FetchBrokerSecret(ctx, nil, hub, id, secret, name)
			if tc.code == "" {
				if err != nil || v != tc.value {
					t.Fatalf("%q %v", v, err)
				}
				return
			}
			if !api.IsCode(err, tc.code) || (tc.status != 0 && api.AsError(err).Status != tc.status) {
				t.Fatalf("got %v, want %d %s", err, tc.status, tc.code)
			}
		})
	}
	// A broker's endpoint in the control channel's scheme.
	answer = func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"name":"SPOKE_KUBECONFIG","value":"v"}`)) }
	if v, err := FetchBrokerSecret(ctx, nil, "ws"+strings.TrimPrefix(hub, "http"), id, secret, name); err != nil || v != "v" {
		t.Fatalf("ws endpoint: %q %v", v, err)
	}
	if _, err := FetchBrokerSecret(ctx, nil, "ftp://x", id, secret, name); err == nil {
		t.Fatal("an ftp endpoint accepted")
	}
	answer = func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"name":"OTHER","value":"x"}`)) }
	if _, err := FetchBrokerSecret(ctx, nil, hub, id, secret, name); err == nil {
		t.Fatal("an answer for another name accepted")
	}
	before := sent
	for _, bad := range []string{"../x", "a/b", "", "has space"} {
		if _, err := FetchBrokerSecret(ctx, nil, hub, id, secret, bad); !api.IsCode(err, api.CodeInvalidRequest) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if sent != before {
		t.Fatal("a bad name was sent")
	}
}
