package check

import (
	"fmt"
	"regexp"
	"strings"
)

// Question is one access review: may the identity do Verb on Resource
// (of API group Group, with Subresource) in the namespace under review.
type Question struct {
	Verb, Group, Resource, Subresource string
}

// String is how results name it: "create jobs.batch", "get pods/log".
func (q Question) String() string {
	r := q.Resource
	if q.Subresource != "" {
		r += "/" + q.Subresource
	}
	if q.Group != "" {
		r += "." + q.Group
	}
	return q.Verb + " " + r
}

// Answer is an access review's answer to a Question. Err is set when the
// review itself could not be made; Reason is the authorizer's (RBAC names
// the binding that allowed it).
type Answer struct {
	Question
	Allowed bool
	Reason  string
	Err     string
}

func q(verb, group, resource, sub string) Question { return Question{verb, group, resource, sub} }

// SpokeNeeds are what the spoke kubeconfig's identity must be allowed in
// the Jobs' namespace: submit, follow and cancel Jobs (list: the startup
// sweep and a restarted broker's follow select them by label), find their
// pods and read the pods' logs (the results ride the log).
var SpokeNeeds = []Question{
	q("create", "batch", "jobs", ""), q("get", "batch", "jobs", ""), q("list", "batch", "jobs", ""),
	q("delete", "batch", "jobs", ""),
	q("get", "", "pods", ""), q("list", "", "pods", ""),
	q("get", "", "pods", "log"),
}

// ResumeJob is unsuspending a Job: the runner submits every Job
// suspended and, on a spoke without Kueue (no queue), admits it itself.
var ResumeJob = q("patch", "batch", "jobs", "")

// SpokeNeedsFor are SpokeNeeds for a cluster whose default queue is
// queue: with none, the runner admits its Jobs itself (ResumeJob).
func SpokeNeedsFor(queue string) []Question {
	if queue != "" {
		return SpokeNeeds
	}
	return concat(SpokeNeeds, []Question{ResumeJob})
}

// SecretsRead are the verbs that read Secrets.
var SecretsRead = []Question{q("get", "", "secrets", ""), q("list", "", "secrets", ""), q("watch", "", "secrets", "")}

// PodMaking are the verbs that put a pod of the caller's choosing in the
// namespace, directly or through a controller, or run a command in one
// that is there: each can read any Secret of the namespace without any
// secrets permission (a pod mounts it; exec reads what the broker's pod
// mounts). Changing what runs is as good as creating it: a patched pod's
// new image runs with the pod's mounts and token (the broker's own pod),
// an ephemeral container or an attach joins a running pod, and a changed
// workload's pod template makes new pods.
var PodMaking = func() []Question {
	out := []Question{
		q("create", "", "pods", ""), q("create", "", "pods", "exec"), q("create", "", "pods", "attach"),
		q("update", "", "pods", ""), q("patch", "", "pods", ""),
		q("update", "", "pods", "ephemeralcontainers"), q("patch", "", "pods", "ephemeralcontainers"),
	}
	for _, w := range []struct{ group, resource string }{
		{"apps", "deployments"}, {"apps", "replicasets"}, {"apps", "statefulsets"}, {"apps", "daemonsets"},
		{"batch", "jobs"}, {"batch", "cronjobs"},
	} {
		for _, verb := range []string{"create", "update", "patch"} {
			out = append(out, q(verb, w.group, w.resource, ""))
		}
	}
	return out
}()

// TokenMinting is becoming another identity: minting a token for a
// ServiceAccount of the namespace (the broker's own, say), impersonating
// an account, user or group, or binding (or widening) a role past its own
// permissions.
var TokenMinting = []Question{
	q("create", "", "serviceaccounts", "token"),
	q("impersonate", "", "serviceaccounts", ""), q("impersonate", "", "users", ""), q("impersonate", "", "groups", ""),
	q("bind", "rbac.authorization.k8s.io", "roles", ""), q("bind", "rbac.authorization.k8s.io", "clusterroles", ""),
	q("escalate", "rbac.authorization.k8s.io", "roles", ""), q("escalate", "rbac.authorization.k8s.io", "clusterroles", ""),
}

// SandboxQuestions are every question asked of the sandbox identity.
func SandboxQuestions() []Question {
	return concat(SecretsRead, PodMaking, TokenMinting)
}

// SpokeQuestions are every question the spoke identity asks of itself,
// for a cluster whose default queue is queue.
func SpokeQuestions(queue string) []Question { return concat(SpokeNeedsFor(queue), SecretsRead) }

func concat(qs ...[]Question) []Question {
	var out []Question
	for _, l := range qs {
		out = append(out, l...)
	}
	return out
}

// ServiceAccountUser is the user name of ServiceAccount sa in ns, and
// ServiceAccountGroups the groups the API server gives it: a review must
// name them, because a binding to system:serviceaccounts (every account)
// grants as surely as one to the account itself, and a review of the bare
// user name would not see it.
func ServiceAccountUser(ns, sa string) string { return "system:serviceaccount:" + ns + ":" + sa }

// ServiceAccountGroups: see ServiceAccountUser.
func ServiceAccountGroups(ns string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}

// rbacReason is the RBAC authorizer's reason for an allowed request:
// `RBAC: allowed by RoleBinding "name/ns" of Role "r" to ServiceAccount "sa/ns"`.
var rbacReason = regexp.MustCompile(`(ClusterRoleBinding|RoleBinding) "([^"]+)" of (ClusterRole|Role) "([^"]+)" to (ServiceAccount|User|Group) "([^"]+)"`)

// grantFix is the fix for a permission that must not be there: remove
// the binding the authorizer named (or the rule from its role), else a
// generic fix quoting the authorizer.
func grantFix(a Answer, who string) string {
	m := rbacReason.FindStringSubmatch(a.Reason)
	if m == nil {
		reason := a.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return fmt.Sprintf("remove what grants %s %s (the authorizer said: %s)", who, a.Question, reason)
	}
	kind, binding, roleKind, role, subjKind, subj := m[1], m[2], m[3], m[4], m[5], m[6]
	where := ""
	if kind == "RoleBinding" {
		if name, ns, ok := strings.Cut(binding, "/"); ok {
			binding, where = name, " in namespace "+ns
		}
	}
	return fmt.Sprintf("remove the %s %s%s granting %s (it binds %s %s to %s %s), or drop that rule from %s %s",
		kind, binding, where, a.Question, roleKind, role, subjKind, subj, roleKind, role)
}

// verbsOf lists answers' questions: "get secrets, list secrets".
func verbsOf(as []Answer) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.Question.String()
	}
	return strings.Join(s, ", ")
}

// split sorts answers to qs into allowed, denied and failed (with their
// error); a question with no answer counts as failed.
func split(as []Answer, qs []Question) (allowed, denied, failed []Answer) {
	by := map[Question]Answer{}
	for _, a := range as {
		by[a.Question] = a
	}
	for _, x := range qs {
		a, ok := by[x]
		switch {
		case !ok:
			failed = append(failed, Answer{Question: x, Err: "not asked"})
		case a.Err != "":
			failed = append(failed, a)
		case a.Allowed:
			allowed = append(allowed, a)
		default:
			denied = append(denied, a)
		}
	}
	return allowed, denied, failed
}

func errsOf(as []Answer) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.Question.String() + ": " + a.Err
	}
	return strings.Join(s, "; ")
}

func dedupe(fixes []string) string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fixes {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return strings.Join(out, "; ")
}
