package check

import (
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
)

// answers answers every question of qs: allowed when allow names it.
func answers(qs []Question, allow map[Question]string) []Answer {
	out := make([]Answer, len(qs))
	for i, x := range qs {
		reason, ok := allow[x]
		out[i] = Answer{Question: x, Allowed: ok, Reason: reason}
	}
	return out
}

func find(t *testing.T, rs []Result, probe string) Result {
	t.Helper()
	for _, r := range rs {
		if r.Probe == probe {
			return r
		}
	}
	t.Fatalf("no %s probe in %+v", probe, rs)
	return Result{}
}

func needsAllowed() map[Question]string {
	m := map[Question]string{}
	for _, x := range SpokeNeedsFor("") {
		m[x] = `RBAC: allowed by RoleBinding "spoke/gpu" of Role "scion-jobs" to ServiceAccount "scion-spoke/gpu"`
	}
	return m
}

func TestSpokeProbes(t *testing.T) {
	exp := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	secretsToo := needsAllowed()
	secretsToo[q("get", "", "secrets", "")] = `RBAC: allowed by ClusterRoleBinding "too-much" of ClusterRole "view-all" to ServiceAccount "scion-spoke/gpu"`
	noLog := needsAllowed()
	delete(noLog, q("get", "", "pods", "log"))
	base := SpokeInput{Cluster: "wharf", Tier: "public", Secret: "SPOKE_WHARF", Namespace: "gpu", Version: "v1.37.2"}
	for _, tc := range []struct {
		name   string
		mod    func(*SpokeInput)
		probe  string
		status string
		want   []string // substrings of message+fix
		count  int
	}{
		{"all good", func(in *SpokeInput) { in.Answers = answers(SpokeQuestions(""), needsAllowed()) }, ProbeLeastPrivilege, api.CheckPassed, nil, 4},
		{"reach passes", func(in *SpokeInput) { in.Answers = answers(SpokeQuestions(""), needsAllowed()) }, ProbeReach, api.CheckPassed, []string{"v1.37.2", "public"}, 4},
		{"missing secret", func(in *SpokeInput) { in.SecretErr = "secret_not_found" }, ProbeKubeconfig, api.CheckFailed, []string{"SPOKE_WHARF", "--kubeconfig-secret-file SPOKE_WHARF=PATH"}, 1},
		{"bad kubeconfig", func(in *SpokeInput) { in.OpenErr = "an exec credential plugin is not allowed" }, ProbeKubeconfig, api.CheckFailed, []string{"exec", "self-contained"}, 1},
		{"unreachable bastion", func(in *SpokeInput) {
			in.Tier, in.Unreachable = "bastion", "spoke wharf (bastion tier) unreachable: i/o timeout"
		}, ProbeReach, api.CheckFailed, []string{"wharf", "bastion tier", "known_hosts"}, 1},
		{"unreachable aliases", func(in *SpokeInput) { in.Tier, in.Unreachable = "host_aliases", "x" }, ProbeReach, api.CheckFailed, []string{"host_aliases IP"}, 1},
		{"bound token", func(in *SpokeInput) {
			in.TokenExpires, in.Answers = &exp, answers(SpokeQuestions(""), needsAllowed())
		}, ProbeToken, api.CheckFailed, []string{"2026-12-01T19:00:00Z", "kubernetes.io/service-account-token Secret", "SPOKE_WHARF"}, 4},
		{"no pods/log", func(in *SpokeInput) { in.Answers = answers(SpokeQuestions(""), noLog) }, ProbeJobPermissions, api.CheckFailed, []string{"cannot get pods/log in namespace gpu", "Role"}, 4},
		{"reads secrets", func(in *SpokeInput) { in.Answers = answers(SpokeQuestions(""), secretsToo) }, ProbeLeastPrivilege, api.CheckFailed,
			[]string{"can get secrets", "remove the ClusterRoleBinding too-much granting get secrets", "ClusterRole view-all"}, 4},
		{"review failed", func(in *SpokeInput) {
			in.Answers = answers(SpokeQuestions(""), needsAllowed())
			in.Answers[0].Err = "forbidden"
		}, ProbeJobPermissions, api.CheckFailed, []string{"create jobs.batch: forbidden"}, 4},
		{"no patch without a queue", func(in *SpokeInput) {
			m := needsAllowed()
			delete(m, ResumeJob)
			in.Answers = answers(SpokeQuestions(""), m)
		}, ProbeJobPermissions, api.CheckFailed, []string{"cannot patch jobs.batch", "the runner admits"}, 4},
		{"queued: no patch needed", func(in *SpokeInput) {
			m := needsAllowed()
			delete(m, ResumeJob)
			in.Queue, in.Answers = "h200", answers(SpokeQuestions("h200"), m)
		}, ProbeJobPermissions, api.CheckPassed, []string{"can create jobs.batch"}, 4},
		{"unanswered", func(in *SpokeInput) {}, ProbeLeastPrivilege, api.CheckFailed, []string{"not asked"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.mod(&in)
			rs := Spoke(in)
			if len(rs) != tc.count {
				t.Errorf("%d results, want %d: %+v", len(rs), tc.count, rs)
			}
			r := find(t, rs, tc.probe)
			if r.Status != tc.status || r.Cluster != "wharf" || r.Tier != in.Tier {
				t.Fatalf("%+v", r)
			}
			if (r.Status == api.CheckPassed) != (r.Fix == "") {
				t.Errorf("fix %q with status %s", r.Fix, r.Status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message+" | "+r.Fix, w) {
					t.Errorf("%q not in %q | %q", w, r.Message, r.Fix)
				}
			}
		})
	}
}

func TestSandboxProbes(t *testing.T) {
	no, yes := false, true
	good := SandboxInput{Context: "kind", Namespace: "agents", ServiceAccount: "scion-agent-sandbox",
		Answers: answers(SandboxQuestions(), nil), Account: Account{Found: true, Automount: &no},
		PodServiceAccount: "scion-agent-sandbox", PodAutomount: &no}
	bind := func(role string) string {
		return `RBAC: allowed by RoleBinding "oops/agents" of Role "` + role + `" to ServiceAccount "scion-agent-sandbox/agents"`
	}
	for _, tc := range []struct {
		name   string
		mod    func(*SandboxInput)
		probe  string
		status string
		want   []string
	}{
		{"ours passes secrets", func(*SandboxInput) {}, ProbeSandboxSecrets, api.CheckPassed, []string{"cannot get, list or watch Secrets"}},
		{"ours passes pods", func(*SandboxInput) {}, ProbeSandboxPods, api.CheckPassed, nil},
		{"ours passes automount", func(*SandboxInput) {}, ProbeSandboxAccount, api.CheckPassed, nil},
		{"ours passes template", func(*SandboxInput) {}, ProbeSandboxPodSpec, api.CheckPassed, nil},
		{"secrets get", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("get", "", "secrets", ""): bind("reader")})
		}, ProbeSandboxSecrets, api.CheckFailed, []string{"can get secrets in namespace agents", "remove the RoleBinding oops in namespace agents granting get secrets", "Role reader"}},
		{"group binding", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("list", "", "secrets", ""): `RBAC: allowed by ClusterRoleBinding "all-sa" of ClusterRole "secret-reader" to Group "system:serviceaccounts"`})
		}, ProbeSandboxSecrets, api.CheckFailed, []string{"remove the ClusterRoleBinding all-sa granting list secrets", "Group system:serviceaccounts"}},
		{"pods create", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("create", "", "pods", ""): bind("maker")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"can create pods", "mount any Secret", "RoleBinding oops"}},
		{"deployments create", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("create", "apps", "deployments", ""): "some webhook said yes"})
		}, ProbeSandboxPods, api.CheckFailed, []string{"create deployments.apps", "the authorizer said: some webhook said yes"}},
		// Changing a pod that runs (the broker's own: a new image runs in
		// it with its mounts and token), attaching an ephemeral container
		// to it, or changing a workload's pod template are as good as
		// making a pod.
		{"pods patch", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("patch", "", "pods", ""): bind("patcher")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"can patch pods", "RoleBinding oops"}},
		{"pods update", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("update", "", "pods", ""): bind("patcher")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"can update pods"}},
		{"ephemeral containers", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("update", "", "pods", "ephemeralcontainers"): bind("debugger")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"update pods/ephemeralcontainers"}},
		{"pods attach", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("create", "", "pods", "attach"): bind("debugger")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"create pods/attach"}},
		{"deployments patch", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("patch", "apps", "deployments", ""): bind("deployer")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"patch deployments.apps"}},
		{"cronjobs update", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("update", "batch", "cronjobs", ""): bind("deployer")})
		}, ProbeSandboxPods, api.CheckFailed, []string{"update cronjobs.batch"}},
		{"token mint", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("create", "", "serviceaccounts", "token"): bind("minter")})
		}, ProbeSandboxTokens, api.CheckFailed, []string{"create serviceaccounts/token"}},
		// Becoming another identity is as good as minting its token.
		{"impersonate serviceaccounts", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("impersonate", "", "serviceaccounts", ""): bind("sudo")})
		}, ProbeSandboxTokens, api.CheckFailed, []string{"impersonate serviceaccounts"}},
		{"impersonate users", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("impersonate", "", "users", ""): bind("sudo")})
		}, ProbeSandboxTokens, api.CheckFailed, []string{"impersonate users"}},
		{"bind roles", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("bind", "rbac.authorization.k8s.io", "clusterroles", ""): bind("binder")})
		}, ProbeSandboxTokens, api.CheckFailed, []string{"bind clusterroles.rbac.authorization.k8s.io"}},
		{"escalate roles", func(in *SandboxInput) {
			in.Answers = answers(SandboxQuestions(), map[Question]string{q("escalate", "rbac.authorization.k8s.io", "roles", ""): bind("binder")})
		}, ProbeSandboxTokens, api.CheckFailed, []string{"escalate roles.rbac.authorization.k8s.io"}},
		{"automount true", func(in *SandboxInput) { in.Account.Automount = &yes }, ProbeSandboxAccount, api.CheckFailed,
			[]string{"automountServiceAccountToken true", "set automountServiceAccountToken: false on ServiceAccount agents/scion-agent-sandbox"}},
		{"automount unset", func(in *SandboxInput) { in.Account.Automount = nil }, ProbeSandboxAccount, api.CheckFailed, []string{"unset", "patch serviceaccount scion-agent-sandbox"}},
		{"no account", func(in *SandboxInput) { in.Account = Account{} }, ProbeSandboxAccount, api.CheckFailed, []string{"does not exist", "create ServiceAccount agents/scion-agent-sandbox"}},
		{"account forbidden", func(in *SandboxInput) { in.Account = Account{Err: "forbidden", Forbidden: true} }, ProbeSandboxAccount, api.CheckFailed, []string{"get on serviceaccounts in namespace agents"}},
		{"sar refused", func(in *SandboxInput) { in.ReviewRefused, in.Answers = "forbidden", nil }, ProbeAccessReview, api.CheckFailed, []string{"create on subjectaccessreviews.authorization.k8s.io"}},
		{"pod as other sa", func(in *SandboxInput) { in.PodServiceAccount = "default" }, ProbeSandboxPodSpec, api.CheckFailed, []string{"service_account"}},
		{"pod automount", func(in *SandboxInput) { in.PodAutomount = nil }, ProbeSandboxPodSpec, api.CheckFailed, []string{"pod.go"}},
		{"broker unreachable", func(in *SandboxInput) { in.ClientErr = "connection refused" }, ProbeBrokerReachable, api.CheckFailed, []string{"server.broker.kubernetes.kubeconfig"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good
			tc.mod(&in)
			rs := Sandbox(in)
			r := find(t, rs, tc.probe)
			if r.Status != tc.status || r.Cluster != "kind" || r.Tier != TierBroker {
				t.Fatalf("%+v", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message+" | "+r.Fix, w) {
					t.Errorf("%q not in %q | %q", w, r.Message, r.Fix)
				}
			}
			if tc.status == api.CheckPassed && tc.name != "ours passes template" {
				for _, o := range rs {
					if o.Status != api.CheckPassed {
						t.Errorf("ours: %+v", o)
					}
				}
			}
		})
	}
}

func TestQuestionString(t *testing.T) {
	for x, want := range map[Question]string{
		q("create", "batch", "jobs", ""):            "create jobs.batch",
		q("get", "", "pods", "log"):                 "get pods/log",
		q("create", "", "serviceaccounts", "token"): "create serviceaccounts/token",
	} {
		if x.String() != want {
			t.Errorf("%q, want %q", x.String(), want)
		}
	}
}
