package broker

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/wire"
)

// TestJobPathsRedactURLUserinfo: credentials in the URLs of a spoke (the
// block's proxy_url, the kubeconfig's server and proxy-url) reach neither
// the Hub (job.run's refusal, job.update's message and typed error) nor
// the broker's log, through the real spoke pool and Job runner.
func TestJobPathsRedactURLUserinfo(t *testing.T) {
	const secret, user = "hunter2", "tokenuser"
	cred := user + ":" + secret + "@"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // its certificate: a CA that loads
	defer tlsSrv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	kubeconfig := func(server, proxy string) string {
		p := ""
		if proxy != "" {
			p = ", proxy-url: " + proxy
		}
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster: {server: %q, certificate-authority-data: %s%s}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: s\n  context: {cluster: s, user: u}\ncurrent-context: s\n",
			server, base64.StdEncoding.EncodeToString(ca), p)
	}
	secrets := map[string]string{
		"BADPROXY_KC": kubeconfig("https://api.x:6443", "ftp://"+cred+"p:3128"),
		"SERVER_KC":   kubeconfig("https://"+cred+closed, ""),
		"PROXIED_KC":  kubeconfig("https://api.x:6443", ""),
	}
	f, err := fleet.Parse("clusters.toml", fmt.Appendf(nil, `[clusters.badproxy]
kubeconfig_secret = "BADPROXY_KC"
[clusters.server]
kubeconfig_secret = "SERVER_KC"
connect_timeout = "1s"
[clusters.proxied]
kubeconfig_secret = "PROXIED_KC"
proxy_url = "http://%s%s"
connect_timeout = "1s"
`, cred, closed))
	if err != nil {
		t.Fatal(err)
	}
	hub := newTestHub(t)
	rt := fake.New()
	if _, err := rt.Create(t.Context(), runtime.Spec{AgentID: "a1", ProjectID: "p1", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	b := startBroker(t, hub, rt, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Jobs = JobsConfig{Fleet: f, Secrets: func(_ context.Context, name string) (string, error) {
			if v, ok := secrets[name]; ok {
				return v, nil
			}
			return "", api.NotFound(api.CodeSecretNotFound, "secret %s not found", name)
		}}
	})
	waitConnected(t, b)
	leaks := func(what, s string) {
		t.Helper()
		if strings.Contains(s, secret) || strings.Contains(s, user) {
			t.Errorf("%s carries the URL's userinfo: %s", what, s)
		}
	}

	err = hub.call(wire.MethodJobRun, jobRun("j1", "a1", "badproxy", ""), nil)
	wantCode(t, err, api.CodeInvalidRequest)
	leaks("the refusal", err.Error())
	if !strings.Contains(err.Error(), `proxy-url "ftp://***@p:3128"`) {
		t.Errorf("refusal: %v", err)
	}
	for _, c := range []string{"server", "proxied"} {
		id := "j-" + c
		if err := hub.call(wire.MethodJobRun, jobRun(id, "a1", c, ""), nil); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		for {
			u := recv(t, hub.jobUpdates, c+"'s error")
			if u.JobID != id {
				continue
			}
			leaks(c+"'s update", fmt.Sprintf("%s %+v", u.Message, u.Error))
			if u.State.Terminal() {
				if u.State != api.JobStateError || u.Error == nil || u.Error.Message == "" {
					t.Fatalf("%s: %+v", c, u)
				}
				break
			}
		}
	}
	leaks("the broker's log", logs.String())
	if !strings.Contains(logs.String(), "job not submitted") {
		t.Errorf("no submit failure logged:\n%s", logs.String())
	}
}
