package check

import (
	"fmt"

	"github.com/scion-go/scion/api"
)

// SandboxInput is what the probes saw of one namespace the broker's
// agents run in, on the broker's own cluster (its kubeconfig context).
type SandboxInput struct {
	Context, Profile string
	Namespace        string
	ServiceAccount   string
	// ClientErr: the broker's cluster could not be reached with its own
	// credentials (nothing else was probed).
	ClientErr string
	// ReviewRefused is set when the broker's credentials may not create
	// SubjectAccessReviews (the reviews of the sandbox identity).
	ReviewRefused string
	// Answers are the reviews of SandboxQuestions for the sandbox
	// ServiceAccount in Namespace.
	Answers []Answer
	// Account is the sandbox ServiceAccount object as read.
	Account Account
	// PodServiceAccount and PodAutomount are what the runtime's pod
	// template sets (runtime/kubernetes builds it); PodErr when it could
	// not be built.
	PodServiceAccount string
	PodAutomount      *bool
	PodErr            string
}

// Account is a ServiceAccount object as read: Err when it could not be
// (Forbidden: the broker may not get it), Found false when it is not
// there.
type Account struct {
	Found     bool
	Automount *bool
	Err       string
	Forbidden bool
}

// Sandbox decides the sandbox probes for one namespace.
func Sandbox(in SandboxInput) []Result {
	sa := in.Namespace + "/" + in.ServiceAccount
	r := func(probe string, ok bool, msg, fix string) Result {
		st := api.CheckFailed
		if ok {
			st, fix = api.CheckPassed, ""
		}
		return Result{Cluster: in.Context, Tier: TierBroker, Profile: in.Profile, Probe: probe, Status: st, Message: msg, Fix: fix}
	}
	if in.ClientErr != "" {
		return []Result{r(ProbeBrokerReachable, false, in.ClientErr,
			"check server.broker.kubernetes.kubeconfig and the profile's context: scion check uses the broker's own credentials")}
	}
	var out []Result
	who := "ServiceAccount " + sa
	if in.ReviewRefused != "" {
		out = append(out, r(ProbeAccessReview, false,
			fmt.Sprintf("the broker's credentials may not create SubjectAccessReviews, so the sandbox identity's permissions cannot be checked: %s", in.ReviewRefused),
			"grant the broker's identity create on subjectaccessreviews.authorization.k8s.io (a ClusterRole with that one rule and a ClusterRoleBinding to the broker's user or ServiceAccount)"))
	} else {
		out = append(out, denyProbe(r, ProbeSandboxSecrets, in.Answers, SecretsRead, who, in.Namespace,
			"cannot get, list or watch Secrets", "the sandbox could read the spoke kubeconfig and every other Secret of the namespace"))
		out = append(out, denyProbe(r, ProbeSandboxPods, in.Answers, PodMaking, who, in.Namespace,
			"cannot create or change pods (directly, through a workload, exec, attach or an ephemeral container)", "a pod it makes can mount any Secret of the namespace without any secrets permission"))
		out = append(out, denyProbe(r, ProbeSandboxTokens, in.Answers, TokenMinting, who, in.Namespace,
			"cannot mint ServiceAccount tokens, impersonate, or bind or escalate roles", "another identity's token (the broker's ServiceAccount's, say) is its permissions"))
	}
	patch := fmt.Sprintf(`set automountServiceAccountToken: false on ServiceAccount %s (kubectl -n %s patch serviceaccount %s -p '{"automountServiceAccountToken":false}')`,
		sa, in.Namespace, in.ServiceAccount)
	switch a := in.Account; {
	case a.Forbidden:
		out = append(out, r(ProbeSandboxAccount, false, fmt.Sprintf("ServiceAccount %s could not be read: %s", sa, a.Err),
			fmt.Sprintf("grant the broker's identity get on serviceaccounts in namespace %s (or run scion check with credentials that may)", in.Namespace)))
	case a.Err != "":
		out = append(out, r(ProbeSandboxAccount, false, fmt.Sprintf("ServiceAccount %s could not be read: %s", sa, a.Err), "check the broker's cluster"))
	case !a.Found:
		out = append(out, r(ProbeSandboxAccount, false, fmt.Sprintf("ServiceAccount %s does not exist: agents' pods would be refused", sa),
			fmt.Sprintf("create ServiceAccount %s with automountServiceAccountToken: false and bind it to nothing (runtime/kubernetes.SandboxServiceAccount; docs/kubernetes.md)", sa)))
	case a.Automount == nil || *a.Automount:
		state := "unset (Kubernetes mounts a token by default)"
		if a.Automount != nil {
			state = "true"
		}
		out = append(out, r(ProbeSandboxAccount, false, fmt.Sprintf("ServiceAccount %s has automountServiceAccountToken %s", sa, state), patch))
	default:
		out = append(out, r(ProbeSandboxAccount, true, fmt.Sprintf("ServiceAccount %s has automountServiceAccountToken false", sa), ""))
	}
	switch {
	case in.PodErr != "":
		out = append(out, r(ProbeSandboxPodSpec, false, "the runtime's pod template could not be built: "+in.PodErr, "fix the profile's kubernetes settings"))
	case in.PodServiceAccount != in.ServiceAccount:
		out = append(out, r(ProbeSandboxPodSpec, false,
			fmt.Sprintf("agents' pods run as ServiceAccount %s, not the checked %s", in.PodServiceAccount, in.ServiceAccount),
			"set the profile's service_account to the sandbox ServiceAccount"))
	case in.PodAutomount == nil || *in.PodAutomount:
		out = append(out, r(ProbeSandboxPodSpec, false, "the runtime's pod template does not set automountServiceAccountToken false",
			"this scion's Kubernetes runtime is wrong: agents' pods must set automountServiceAccountToken: false (runtime/kubernetes/pod.go)"))
	default:
		out = append(out, r(ProbeSandboxPodSpec, true,
			fmt.Sprintf("agents' pods run as ServiceAccount %s with automountServiceAccountToken false", in.PodServiceAccount), ""))
	}
	return out
}

// denyProbe passes when every question of qs was denied to who.
func denyProbe(r func(string, bool, string, string) Result, probe string, as []Answer, qs []Question, who, ns, claim, why string) Result {
	allowed, _, failed := split(as, qs)
	switch {
	case len(failed) > 0:
		return r(probe, false, "access reviews failed: "+errsOf(failed), "check the broker's cluster and its authorization")
	case len(allowed) > 0:
		fixes := make([]string, len(allowed))
		for i, a := range allowed {
			fixes[i] = grantFix(a, who)
		}
		return r(probe, false, fmt.Sprintf("%s can %s in namespace %s: %s", who, verbsOf(allowed), ns, why), dedupe(fixes))
	}
	return r(probe, true, fmt.Sprintf("%s %s in namespace %s", who, claim, ns), "")
}
