package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/spoke/check"
	"github.com/scion-go/scion/spoke/fleet"
)

// impostorAPI is a TLS server with a certificate no kubeconfig trusts
// that answers as a well-set-up spoke would (GET /version; every access
// review allowed but reading Secrets) and records the tokens sent to it.
func impostorAPI(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			fmt.Fprint(w, `{"major":"1","minor":"32","gitVersion":"v1.32.0"}`)
			return
		}
		var rev authzv1.SelfSubjectAccessReview
		json.NewDecoder(r.Body).Decode(&rev)
		ra := rev.Spec.ResourceAttributes
		rev.Status.Allowed = ra != nil && ra.Resource != "secrets"
		rev.APIVersion, rev.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(rev)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), tokens...) }
}

// `scion check` refuses a kubeconfig that turns TLS verification off, as
// the broker does: with host_aliases pointing at an impostor it passed
// reachability and least-privilege against it, sending it the token.
func TestCheckRefusesInsecureSkipTLSVerify(t *testing.T) {
	srv, seen := impostorAPI(t)
	u, _ := url.Parse(srv.URL)
	kc := `apiVersion: v1
kind: Config
clusters:
- name: spoke
  cluster:
    server: https://` + net.JoinHostPort(kube.DarkHost, u.Port()) + `
    insecure-skip-tls-verify: true
users:
- name: sa
  user: {token: spoke-secret-token}
contexts:
- name: spoke
  context: {cluster: spoke, user: sa}
current-context: spoke
`
	c := &fleet.Cluster{Name: "dark", KubeconfigSecret: "SPOKE_DARK", HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"}}
	rs := Spoke(context.Background(), open(t, fleet.Options{}), c, "", secretsOf(map[string]string{"SPOKE_DARK": kc}))
	wantStatus(t, rs, check.ProbeKubeconfig, api.CheckFailed, "insecure-skip-tls-verify is not allowed", "TLS verification on")
	for _, r := range rs {
		if r.Status == api.CheckPassed {
			t.Errorf("passed against the impostor: %+v", r)
		}
	}
	if got := seen(); len(got) != 0 {
		t.Fatalf("the impostor received %d requests: %q", len(got), got)
	}
	if strings.Contains(fmt.Sprint(rs), "spoke-secret-token") {
		t.Fatalf("the token is in the results: %+v", rs)
	}
}
