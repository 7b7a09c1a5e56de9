package hub_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

const spokeKubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: b200\n  cluster: {server: https://10.0.0.1:6443}\n# s3cr3t-token-value\n"

// TestBrokerSecrets: a hub admin sets, lists (names only) and deletes a
// broker's secrets; nobody else may; the value reaches only that broker
// over its signed request (wire.FetchBrokerSecret), never a user token,
// another broker, or a replay; and never appears in a log line.
func TestBrokerSecrets(t *testing.T) {
	engines(t, func(t *testing.T, pg bool) {
		e := testenv.New(t, testenv.Options{Postgres: pg})
		e.NeverLogged(spokeKubeconfig)
		ctx := context.Background()
		a, err := e.Hub.RegisterBroker(ctx, "gpu", hub.BootstrapAdminID, false)
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Hub.RegisterBroker(ctx, "other", hub.BootstrapAdminID, false)
		if err != nil {
			t.Fatal(err)
		}
		e.NeverLogged(a.Secret, b.Secret)
		x, err := e.Admin.PutBrokerSecret(ctx, "gpu", "SPOKE_B200_KUBECONFIG", spokeKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if x.BrokerID != a.BrokerID || x.Name != "SPOKE_B200_KUBECONFIG" || x.CreatedBy != "user:"+hub.BootstrapAdminID {
			t.Fatalf("put: %+v", x)
		}
		xs, err := e.Admin.ListBrokerSecrets(ctx, a.BrokerID)
		if err != nil || len(xs) != 1 || xs[0].Name != x.Name {
			t.Fatalf("list: %+v %v", xs, err)
		}
		if other, err := e.Admin.ListBrokerSecrets(ctx, b.BrokerID); err != nil || len(other) != 0 {
			t.Fatalf("another broker's list: %+v %v", other, err)
		}
		// Only admins.
		mem := client.New(e.URL, userToken(t, e.Store, "mem", api.RoleMember, "", nil))
		_, err = mem.PutBrokerSecret(ctx, "gpu", "X", "v")
		apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
		_, err = mem.ListBrokerSecrets(ctx, "gpu")
		apiErr(t, err, http.StatusForbidden, api.CodeForbidden)
		apiErr(t, mem.DeleteBrokerSecret(ctx, "gpu", x.Name), http.StatusForbidden, api.CodeForbidden)
		// Bad input.
		_, err = e.Admin.PutBrokerSecret(ctx, "gpu", "not-a-name", "v")
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		_, err = e.Admin.PutBrokerSecret(ctx, "gpu", "EMPTY", "")
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		_, err = e.Admin.PutBrokerSecret(ctx, "gpu", "BIG", strings.Repeat("v", api.MaxSecretValue+1))
		apiErr(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		_, err = e.Admin.PutBrokerSecret(ctx, "nobody", "X", "v")
		apiErr(t, err, http.StatusNotFound, api.CodeBrokerNotFound)

		// The broker reads its value.
		v, err := wire.FetchBrokerSecret(ctx, nil, e.URL, a.BrokerID, []byte(a.Secret), x.Name)
		if err != nil || v != spokeKubeconfig {
			t.Fatalf("fetch: %q %v", v, err)
		}
		_, err = wire.FetchBrokerSecret(ctx, nil, e.URL, a.BrokerID, []byte(a.Secret), "MISSING")
		apiErr(t, err, http.StatusNotFound, api.CodeSecretNotFound)
		// Another broker, signing as itself, asking for a's secret.
		path := "/api/v1/runtime-brokers/" + a.BrokerID + "/secrets/" + x.Name + "/value"
		status, body := signedGet(t, e, path, b.BrokerID, b.Secret, nil)
		if status != http.StatusNotFound || strings.Contains(body, "s3cr3t") {
			t.Fatalf("another broker: %d %s", status, body)
		}
		// Wrong secret, a user token, a token with the broker's headers.
		for name, tc := range map[string]struct {
			secret string
			bearer string
		}{
			"wrong secret":       {secret: "not-the-secret"},
			"bearer and headers": {secret: a.Secret, bearer: e.AdminToken},
			"bearer alone":       {bearer: e.AdminToken},
		} {
			var status int
			var body string
			if tc.secret == "" {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				status = resp.StatusCode
			} else {
				status, body = signedGet(t, e, path, a.BrokerID, tc.secret, func(h http.Header) {
					if tc.bearer != "" {
						h.Set("Authorization", "Bearer "+tc.bearer)
					}
				})
			}
			if status != http.StatusUnauthorized || strings.Contains(body, "s3cr3t") {
				t.Errorf("%s: %d %s, want 401", name, status, body)
			}
		}
		// A replayed request: the same signed headers twice.
		h := http.Header{}
		wire.SignHeaders(h, a.BrokerID, []byte(a.Secret), wire.SignedRequest{Method: http.MethodGet, Path: path}, time.Now())
		for i, want := range []int{http.StatusOK, http.StatusUnauthorized} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+path, nil)
			req.Header = h.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("send %d of the same signed request: %d, want %d", i+1, resp.StatusCode, want)
			}
		}
		// Replaced keeps its creation, deleted is gone.
		if _, err := e.Admin.PutBrokerSecret(ctx, a.BrokerID, x.Name, spokeKubeconfig+"# v2\n"); err != nil {
			t.Fatal(err)
		}
		if err := e.Admin.DeleteBrokerSecret(ctx, a.BrokerID, x.Name); err != nil {
			t.Fatal(err)
		}
		apiErr(t, e.Admin.DeleteBrokerSecret(ctx, a.BrokerID, x.Name), http.StatusNotFound, api.CodeSecretNotFound)
		_, err = wire.FetchBrokerSecret(ctx, nil, e.URL, a.BrokerID, []byte(a.Secret), x.Name)
		apiErr(t, err, http.StatusNotFound, api.CodeSecretNotFound)
	})
}

func signedGet(t *testing.T, e *testenv.Env, path, brokerID, secret string, mod func(http.Header)) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, e.URL+path, nil)
	wire.SignHeaders(req.Header, brokerID, []byte(secret), wire.SignedRequest{Method: http.MethodGet, Path: path}, time.Now())
	if mod != nil {
		mod(req.Header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	sb.Write(buf[:n])
	return resp.StatusCode, sb.String()
}

// TestBrokerSecretNeverReachesAnAgent: an agent create naming a broker
// secret's name finds no such secret (agents name only Hub secrets) and
// its broker gets no value; and the broker secret's ciphertext copied
// into the project secrets table does not open there (its sealing scope
// is the broker's).
func TestBrokerSecretNeverReachesAnAgent(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	e.NeverLogged(spokeKubeconfig)
	jb := newJobsBroker(t, e, "gpu", nil)
	if _, err := e.Admin.PutBrokerSecret(ctx, jb.creds.BrokerID, "SPOKE_KUBECONFIG", spokeKubeconfig); err != nil {
		t.Fatal(err)
	}
	_, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "thief", Project: "default", Broker: jb.creds.BrokerID, Start: true,
		Command: []string{"x"}, Secrets: []string{"SPOKE_KUBECONFIG"}})
	apiErr(t, err, http.StatusNotFound, api.CodeSecretNotFound)
	if jb.creates() != 0 {
		t.Fatal("the broker received an agent create")
	}
	bs, err := e.Store.GetBrokerSecret(ctx, jb.creds.BrokerID, "SPOKE_KUBECONFIG")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.PutSecret(ctx, &store.Secret{ProjectID: e.ProjectID, Name: "SPOKE_KUBECONFIG", Ciphertext: bs.Ciphertext,
		CreatedBy: "user:" + hub.BootstrapAdminID, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "thief2", Project: "default", Broker: jb.creds.BrokerID, Start: true,
		Command: []string{"x"}, Secrets: []string{"SPOKE_KUBECONFIG"}})
	apiErr(t, err, http.StatusInternalServerError, api.CodeInternal)
	if strings.Contains(err.Error(), "s3cr3t") || jb.creates() != 0 {
		t.Fatalf("a replayed ciphertext opened: %v", err)
	}
}
