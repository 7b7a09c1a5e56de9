package check

import (
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
)

// Result is one probe's outcome.
type Result = api.CheckResult

// Probe names.
const (
	ProbeKubeconfig     = "kubeconfig"
	ProbeReach          = "reachability"
	ProbeToken          = "token"
	ProbeJobPermissions = "job-permissions"
	ProbeLeastPrivilege = "least-privilege"

	ProbeAccessReview     = "access-review"
	ProbeSandboxSecrets   = "sandbox-secrets"
	ProbeSandboxPods      = "sandbox-pods"
	ProbeSandboxTokens    = "sandbox-tokens"
	ProbeSandboxAccount   = "sandbox-automount"
	ProbeSandboxPodSpec   = "sandbox-pod-template"
	ProbeBrokerReachable  = "broker-cluster"
	TierBroker            = "broker"
	defaultBootstrapGuide = "docs/spokes.md, Bootstrapping a spoke"
)

// SpokeInput is what the probes saw of one spoke.
type SpokeInput struct {
	Cluster, Tier, Profile string
	// Secret is the kubeconfig's Hub secret name (the value is never here).
	Secret string
	// Namespace is the Jobs' namespace on the spoke, Queue the cluster
	// block's default Kueue queue ("" none: the runner admits Jobs).
	Namespace, Queue string
	// SecretErr: the kubeconfig (or the bastion key) could not be had.
	SecretErr string
	// OpenErr: no client could be built from it (not a kubeconfig, not
	// self-contained, a bastion block without its key).
	OpenErr string
	// Unreachable is the typed error's message when the spoke did not
	// answer (within the connect timeout).
	Unreachable string
	// Version is the API server's gitVersion (GET /version).
	Version string
	// TokenExpires is set when the kubeconfig's token is a bound
	// ServiceAccount token (a JWT with an exp claim).
	TokenExpires *time.Time
	// Answers are the spoke identity's own access reviews of
	// SpokeQuestions(Queue) in Namespace.
	Answers []Answer
}

// Spoke decides the spoke probes. A spoke whose kubeconfig is missing or
// that cannot be reached gets that one failed probe: the others would
// only repeat it.
func Spoke(in SpokeInput) []Result {
	r := func(probe string, ok bool, msg, fix string) Result {
		st := api.CheckFailed
		if ok {
			st, fix = api.CheckPassed, ""
		}
		return Result{Cluster: in.Cluster, Tier: in.Tier, Profile: in.Profile, Probe: probe, Status: st, Message: msg, Fix: fix}
	}
	switch {
	case in.SecretErr != "":
		return []Result{r(ProbeKubeconfig, false, fmt.Sprintf("the kubeconfig secret %s: %s", in.Secret, in.SecretErr),
			fmt.Sprintf("store the spoke's kubeconfig as the broker-scoped Hub secret %s (or check offline with --kubeconfig-secret-file %s=PATH)", in.Secret, in.Secret))}
	case in.OpenErr != "":
		return []Result{r(ProbeKubeconfig, false, in.OpenErr,
			fmt.Sprintf("fix the kubeconfig in secret %s or the cluster block: a self-contained kubeconfig with TLS verification on (embedded CA and token, no exec plugin or file, no insecure-skip-tls-verify) and, for the bastion tier, its key_secret", in.Secret))}
	case in.Unreachable != "":
		return []Result{r(ProbeReach, false, in.Unreachable, reachFix(in.Tier))}
	}
	out := []Result{r(ProbeReach, true, fmt.Sprintf("the API server answered GET /version (%s) over the %s tier", in.Version, in.Tier), "")}
	if in.TokenExpires != nil {
		out = append(out, r(ProbeToken, false,
			fmt.Sprintf("the kubeconfig's token is a bound ServiceAccount token that expires at %s: it would expire mid-Job and mid-log-poll", in.TokenExpires.UTC().Format(time.RFC3339)),
			fmt.Sprintf("use a long-lived Secret-based token: create a kubernetes.io/service-account-token Secret for the spoke ServiceAccount, put its token in the kubeconfig and store that as secret %s (%s)", in.Secret, defaultBootstrapGuide)))
	} else {
		out = append(out, r(ProbeToken, true, "the kubeconfig's credential does not expire (no bound token)", ""))
	}
	allowed, denied, failed := split(in.Answers, SpokeNeedsFor(in.Queue))
	switch {
	case len(failed) > 0:
		out = append(out, r(ProbeJobPermissions, false, "access reviews failed: "+errsOf(failed),
			"the spoke identity must be able to create selfsubjectaccessreviews (every authenticated user can by default): check the API server's authorization"))
	case len(denied) > 0:
		out = append(out, r(ProbeJobPermissions, false,
			fmt.Sprintf("the spoke identity cannot %s in namespace %s", verbsOf(denied), in.Namespace),
			fmt.Sprintf("grant them in namespace %s: a Role with jobs.batch create/get/list/delete%s, pods get/list and pods/log get, bound to the spoke ServiceAccount (%s)", in.Namespace, patchNote(in.Queue), defaultBootstrapGuide)))
	default:
		out = append(out, r(ProbeJobPermissions, true, fmt.Sprintf("the spoke identity can %s in namespace %s", verbsOf(allowed), in.Namespace), ""))
	}
	allowed, _, failed = split(in.Answers, SecretsRead)
	switch {
	case len(failed) > 0:
		out = append(out, r(ProbeLeastPrivilege, false, "access reviews failed: "+errsOf(failed), "check the API server's authorization"))
	case len(allowed) > 0:
		fixes := make([]string, len(allowed))
		for i, a := range allowed {
			fixes[i] = grantFix(a, "the spoke identity")
		}
		out = append(out, r(ProbeLeastPrivilege, false,
			fmt.Sprintf("the spoke identity can %s in namespace %s: more than Jobs need, and a leaked kubeconfig would read them", verbsOf(allowed), in.Namespace),
			dedupe(fixes)))
	default:
		out = append(out, r(ProbeLeastPrivilege, true, fmt.Sprintf("the spoke identity cannot read Secrets in namespace %s", in.Namespace), ""))
	}
	return out
}

// patchNote is the Role's extra verb on a spoke without Kueue.
func patchNote(queue string) string {
	if queue != "" {
		return ""
	}
	return "/patch (no queue: the runner admits its suspended Jobs itself)"
}

// reachFix says what to look at for an unreachable spoke, by tier.
func reachFix(tier string) string {
	switch tier {
	case "host_aliases":
		return "check the host_aliases IP of the API host (a changed spoke API IP fails here until the cluster block is updated) and that it answers from this host"
	case "proxy":
		return "check proxy_url: the proxy must answer and allow CONNECT to the API server's host and port"
	case "bastion":
		return "check the bastion block (host, user, key_secret, known_hosts) and that the bastion can open a channel to the API server"
	default:
		return "check the kubeconfig's server address and that the API server answers from this host (a DNS-dark host needs host_aliases, a private one proxy_url or a bastion)"
	}
}

// ProbeFleet is the fleet's own consistency: a profile's jobs.cluster
// that names no cluster.
const ProbeFleet = "fleet"

// Fleet is the failed fleet probe of a profile whose jobs.cluster names
// cluster, which the fleet lacks (msg says which it has).
func Fleet(profile, cluster, msg string) Result {
	return Result{Cluster: cluster, Tier: "", Profile: profile, Probe: ProbeFleet, Status: api.CheckFailed, Message: msg,
		Fix: fmt.Sprintf("add a [clusters.%s] block to clusters.toml (or a clusters block to profile %s), or correct jobs.cluster", cluster, profile)}
}
