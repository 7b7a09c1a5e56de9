package probe

import (
	"cmp"
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	k8srt "github.com/scion-go/scion/runtime/kubernetes"
	"github.com/scion-go/scion/spoke/check"
)

// Target is one namespace agents run in on the broker's own cluster, and
// the settings the runtime resolves for them there.
type Target struct {
	// Context is the kubeconfig context ("" the current one), Name how
	// results name it (the context, resolved).
	Context, Name string
	Profile       string
	Settings      k8srt.Settings
}

// Namespace and ServiceAccount are the target's, defaults applied as the
// runtime applies them.
func (t Target) Namespace() string { return cmp.Or(t.Settings.Namespace, k8srt.DefaultNamespace) }

// ServiceAccount: see Namespace.
func (t Target) ServiceAccount() string {
	return cmp.Or(t.Settings.ServiceAccount, k8srt.DefaultServiceAccount)
}

// Sandbox runs the sandbox probes of t with kc, a client with the broker's
// own credentials (clientErr when none could be made).
func Sandbox(ctx context.Context, kc kubernetes.Interface, clientErr error, t Target) []check.Result {
	ns, sa := t.Namespace(), t.ServiceAccount()
	in := check.SandboxInput{Context: t.Name, Profile: t.Profile, Namespace: ns, ServiceAccount: sa}
	if clientErr == nil {
		// One cheap call first: an unreachable cluster is one failure,
		// not one per review.
		if _, err := serverVersion(ctx, kc); err != nil {
			clientErr = err
		}
	}
	if clientErr != nil {
		in.ClientErr = clientErr.Error()
		return check.Sandbox(in)
	}
	as, refused := askFor(ctx, kc, check.ServiceAccountUser(ns, sa), check.ServiceAccountGroups(ns), ns, check.SandboxQuestions())
	if refused != nil {
		in.ReviewRefused = refused.Error()
	}
	in.Answers = as
	acct, err := kc.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		in.Account = check.Account{Err: err.Error(), Forbidden: isForbidden(err)}
	default:
		in.Account = check.Account{Found: true, Automount: acct.AutomountServiceAccountToken}
	}
	spec, err := k8srt.AgentPodTemplate(t.Settings)
	if err != nil {
		in.PodErr = err.Error()
	} else {
		in.PodServiceAccount, in.PodAutomount = spec.ServiceAccountName, spec.AutomountServiceAccountToken
	}
	return check.Sandbox(in)
}
