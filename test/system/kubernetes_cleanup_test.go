package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/wait"
)

// TestKubernetesProjectDeleteAndHubAddress, on a real kube-apiserver with
// a broker process that holds only the runtime's Role:
//
//   - the broker, whose Hub is on loopback, warns at start that pods
//     cannot reach it and names server.broker.agent_hub_endpoint, and
//     `runtime-broker status` shows the address agents get with that
//     setting;
//   - `scion project delete` of a shared-workspace project whose agents are
//     gone removes the project's RWX workspace claim, and its answer (and
//     -o json) names it.
func TestKubernetesProjectDeleteAndHubAddress(t *testing.T) {
	requireBinary(t)
	requireGit(t)
	t.Parallel() // before the fixture (see requireKube)
	c := requireKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := c.Namespace(t)
	user := kube.StaticUsers[0]
	cl := c.Client
	prepareAgentNamespace(t, ctx, cl, ns, user.Name)

	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	remotes := t.TempDir()
	admin.mustScion(t, "project", "create", "shared", "--sharing-mode", api.SharingSharedWorkspace, "--git-remote", makeGitRemote(t, remotes))
	admin.mustScion(t, "hub", "settings", "set", "--default-image", "scion/test-agent:latest")

	b := newKubeBroker(t, hub.URL, token, "shared", c.Kubeconfig(t, "default", map[string]string{"batch": user.Token}), ns)
	allowLocalGitRemotes(t, b.host, remotes)
	b.startKube(t, admin)

	// The Hub is on loopback: the broker says at start that pods cannot
	// reach it, and which setting changes the address.
	if logs := b.proc.Logs(); !strings.Contains(logs, "agents in Kubernetes pods cannot reach the Hub at "+hub.URL) ||
		!strings.Contains(logs, "server.broker.agent_hub_endpoint") {
		t.Errorf("the broker's start-up log does not warn about the loopback Hub:\n%s", logs)
	}
	status := b.mustScion(t, "runtime-broker", "status")
	for _, want := range []string{"Agents reach the Hub at:", hub.URL, "server.broker.agent_hub_endpoint:", "Warning:"} {
		if !strings.Contains(status, want) {
			t.Errorf("runtime-broker status lacks %q:\n%s", want, status)
		}
	}

	var a api.Agent
	if err := admin.scionJSONCmd(&a, "start", "kube-shared", "--project", "shared", "--", "/agent", "serve"); err != nil {
		t.Fatal(err)
	}
	claims := func() []string {
		l, err := cl.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: "scion.claim_scope=project"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range l.Items {
			if c.DeletionTimestamp == nil {
				out = append(out, c.Name)
			}
		}
		return out
	}
	before := claims()
	if len(before) != 1 || !strings.HasSuffix(before[0], "-workspace") {
		t.Fatalf("project claims of a shared-workspace agent = %v, want its RWX workspace claim", before)
	}
	admin.mustScion(t, "stop", "kube-shared", "--project", "shared")
	admin.mustScion(t, "delete", "kube-shared", "--project", "shared")
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		if got := claims(); !slices.Equal(got, before) {
			return fmt.Errorf("project claims after the agent's delete = %v, want %v (they outlive the agent)", got, before)
		}
		return nil
	})

	var res api.ProjectDeleted
	admin.mustScionJSON(t, &res, "project", "delete", "shared")
	want := ns + "/" + before[0]
	if len(res.Removed) != 1 || res.Removed[0].Resource != want || res.Removed[0].Broker != "k8s" || len(res.Left) != 0 {
		t.Errorf("project delete answer = %+v, want %s removed on k8s and nothing left", res, want)
	}
	if got := claims(); len(got) != 0 {
		t.Errorf("project claims after the project's delete: %v", got)
	}
}

// allowLocalGitRemotes sets server.broker.allow_local_git_remotes to roots
// in the host's settings.yaml (the test's remote is a file:// URL).
func allowLocalGitRemotes(t *testing.T, h *host, roots ...string) {
	t.Helper()
	path := filepath.Join(h.home, "settings.yaml")
	var s config.Settings
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.Server.Broker.AllowLocalGitRemotes = &config.LocalGitRemotes{List: roots}
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
