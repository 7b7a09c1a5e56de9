package kubernetes_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/runtime"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
)

// TestEveryOperationUnderRuntimeRole drives every runtime operation as an
// identity whose only permissions are kube.RuntimeRole in one namespace:
// as a ServiceAccount (token from the TokenRequest API) and as a plain
// user of the API server's token file.
func TestEveryOperationUnderRuntimeRole(t *testing.T) {
	t.Run("ServiceAccount", func(t *testing.T) {
		n := newNS(t)
		allOperations(t, n, n.brokerIdentity(t, "scion-broker"))
	})
	t.Run("User", func(t *testing.T) {
		n := newNS(t)
		u := kube.StaticUsers[0]
		n.bindRuntimeRole(t, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: u.Name})
		allOperations(t, n, n.c.ConfigFor(u.Token))
	})
}

// allOperations runs Create, Inspect, Inventory, Logs, Start, Exec, Stop,
// Suspend, Delete and Events as cfg, and checks that the same identity is
// refused in a namespace where it has no role.
func allOperations(t *testing.T, n ns, cfg *rest.Config) {
	const broker = "broker-rbac"
	rt := n.runtimeAs(t, cfg, broker, nil)
	c := ctx(t)
	sp := withSecrets(spec(broker, "rbac-1")) // the agent's Secret too
	st, err := rt.Create(c, sp)
	if err != nil || st.State != runtime.StateCreated {
		t.Fatalf("Create = %+v, %v", st, err)
	}
	if st, err := rt.Inspect(c, sp.AgentID); err != nil || st.State != runtime.StateCreated {
		t.Fatalf("Inspect = %+v, %v", st, err)
	}
	if out := readLogs(t, rt, sp.AgentID, false); out != "" {
		t.Errorf("Logs of a created agent = %q", out)
	}
	if out := readLogs(t, rt, sp.AgentID, true); out != "" {
		t.Errorf("Logs follow of a created agent = %q", out)
	}
	st, err = rt.Start(c, sp.AgentID)
	if err != nil || st.State != runtime.StatePending || !strings.HasPrefix(st.Message, "pending") {
		t.Fatalf("Start = %+v, %v; want pending (no kubelet)", st, err)
	}
	waitEvent(t, rt, sp.AgentID, runtime.StatePending)
	if again, err := rt.Start(c, sp.AgentID); err != nil || !again.StartedAt.Equal(st.StartedAt) {
		t.Fatalf("second Start = %+v, %v; want the same pod", again, err)
	}
	inv, err := rt.Inventory(c)
	if err != nil || len(inv) != 1 || inv[0].AgentID != sp.AgentID || inv[0].Labels["scion.ports"] != "8080:31000" {
		t.Fatalf("Inventory = %+v, %v", inv, err)
	}
	if out := readLogs(t, rt, sp.AgentID, false); out != "" {
		t.Errorf("Logs of a pending agent = %q", out)
	}
	// Exec waits for a pending pod to run; with no kubelet, until its
	// context ends.
	short, cancel := context.WithTimeout(c, 300*time.Millisecond)
	_, err = rt.Exec(short, sp.AgentID, runtime.ExecRequest{Cmd: []string{"true"}})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec in a pending pod: %v, want it to wait until its context ends", err)
	}
	if _, err := rt.Suspend(c, sp.AgentID); !errors.Is(err, k8srt.ErrUnsupported) {
		t.Errorf("Suspend: %v, want ErrUnsupported", err)
	}
	st, err = rt.Stop(c, sp.AgentID, time.Second)
	if err != nil || st.State != runtime.StateExited {
		t.Fatalf("Stop = %+v, %v", st, err)
	}
	waitEvent(t, rt, sp.AgentID, runtime.StateExited)
	if err := rt.SetAgentToken(c, sp.AgentID, "sca_renewed"); err != nil {
		t.Fatalf("SetAgentToken: %v", err)
	}
	if st, err := rt.Start(c, sp.AgentID); err != nil || st.State != runtime.StatePending {
		t.Fatalf("Start after Stop = %+v, %v", st, err)
	}
	if err := rt.Delete(c, sp.AgentID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := rt.Inspect(c, sp.AgentID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Inspect after Delete: %v", err)
	}

	// The role is the only grant: another namespace refuses the same
	// identity, at Create.
	other := n.c.Namespace(t)
	rt2 := n.runtimeAs(t, cfg, broker, func(o *k8srt.Options) { o.Defaults.Namespace = other })
	if _, err := rt2.Create(c, spec(broker, "rbac-2")); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("Create in a namespace without the role: %v, want forbidden", err)
	}
}

// readLogs reads an agent's whole output (follow ends with the pod).
func readLogs(t *testing.T, rt runtime.Runtime, id string, follow bool) string {
	t.Helper()
	r, err := rt.Logs(ctx(t), id, follow)
	if err != nil {
		t.Fatalf("Logs(%s, follow %v): %v", id, follow, err)
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		t.Fatalf("read logs: %v", err)
	}
	return b.String()
}

// waitEvent waits for an event of the agent in state.
func waitEvent(t *testing.T, rt runtime.Runtime, id, state string) runtime.Status {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-rt.Events():
			if !ok {
				t.Fatal("Events closed")
			}
			if ev.Status.AgentID == id && ev.Status.State == state {
				return ev.Status
			}
		case <-deadline:
			t.Fatalf("no %s event for %s", state, id)
		}
	}
}

// SubjectAccessReview: the agents' sandbox account may not get, list,
// watch or write Secrets in its namespace (nor do anything else); the
// broker's own runtime identity may create, patch and delete them (the
// agents' Secrets) but not get, list or watch them.
func TestSandboxCannotReadSecrets(t *testing.T) {
	n := newNS(t)
	n.brokerIdentity(t, "scion-broker")
	c := ctx(t)
	can := func(user, verb, resource string) bool {
		t.Helper()
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + n.name, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Namespace: n.name, Verb: verb, Resource: resource},
		}}
		out, err := n.c.Client.AuthorizationV1().SubjectAccessReviews().Create(c, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out.Status.Allowed
	}
	sandbox := "system:serviceaccount:" + n.name + ":" + k8srt.DefaultServiceAccount
	broker := "system:serviceaccount:" + n.name + ":scion-broker"
	for _, verb := range []string{"get", "list", "watch"} {
		if can(sandbox, verb, "secrets") {
			t.Errorf("sandbox account may %s secrets", verb)
		}
		if can(broker, verb, "secrets") {
			t.Errorf("the runtime's role lets it %s secrets", verb)
		}
	}
	// The broker writes the agents' Secrets (create, patch, delete) and
	// reads none; the sandbox does neither.
	for _, verb := range []string{"create", "patch", "update", "delete"} {
		if can(sandbox, verb, "secrets") {
			t.Errorf("sandbox account may %s secrets", verb)
		}
		want := verb != "update"
		if got := can(broker, verb, "secrets"); got != want {
			t.Errorf("the runtime's role: %s secrets = %v, want %v", verb, got, want)
		}
	}
	for _, verb := range []string{"create", "get", "list"} {
		if can(sandbox, verb, "pods") {
			t.Errorf("sandbox account may %s pods (and so mount any Secret)", verb)
		}
	}
	// The review is not vacuous: the broker may do what the runtime needs.
	if !can(broker, "create", "pods") || !can(broker, "watch", "pods") {
		t.Fatal("SubjectAccessReview denies the broker's own role: the check above proves nothing")
	}
}

// TestRuntimeRulesSecrets: the Role's only Secret rule is create, patch
// and delete, with no get, list or watch (what the docs promise).
func TestRuntimeRulesSecrets(t *testing.T) {
	var got [][]string
	for _, r := range kube.RuntimeRules() {
		if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*") {
			got = append(got, r.Verbs)
		}
	}
	if len(got) != 1 || !slices.Equal(got[0], []string{"create", "patch", "delete"}) {
		t.Fatalf("Secret verbs in RuntimeRules = %v, want [[create patch delete]]", got)
	}
}
