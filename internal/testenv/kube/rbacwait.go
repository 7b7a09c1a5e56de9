package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RBACTimeout bounds the wait for a grant or a revocation to take
// effect. The API server's RBAC authorizer reads Roles and bindings from
// an informer cache, so a grant is stored at once but decides requests
// only once the cache has caught up: milliseconds on an idle machine,
// seconds on a loaded one. A grant never seen in this long is a bug.
const RBACTimeout = time.Minute

// WaitGranted waits until the API server's authorizer allows subject
// every verb of every rule in namespace ("" for cluster scope), as a
// SubjectAccessReview made with cl (an admin's client) tells. Call it
// after creating the Role and binding, before acting as subject: a
// request made in between can be refused by the lagging cache although
// the grant is stored (a test that did so failed under load).
func WaitGranted(ctx context.Context, cl kubernetes.Interface, namespace string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) error {
	return waitAccess(ctx, cl, namespace, subject, rules, true)
}

// WaitRevoked waits until the authorizer refuses subject every verb of
// every rule: the same cache lags behind a deleted binding, and a test
// that revokes a grant and then expects a refusal must wait for it.
func WaitRevoked(ctx context.Context, cl kubernetes.Interface, namespace string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) error {
	return waitAccess(ctx, cl, namespace, subject, rules, false)
}

// Granted is WaitGranted for a test: it fails t when the grant does not
// take effect within RBACTimeout.
func Granted(t testing.TB, cl kubernetes.Interface, namespace string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RBACTimeout)
	defer cancel()
	if err := WaitGranted(ctx, cl, namespace, subject, rules); err != nil {
		t.Fatal(err)
	}
}

// Revoked is WaitRevoked for a test.
func Revoked(t testing.TB, cl kubernetes.Interface, namespace string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RBACTimeout)
	defer cancel()
	if err := WaitRevoked(ctx, cl, namespace, subject, rules); err != nil {
		t.Fatal(err)
	}
}

// BindingsGranted waits until every RoleBinding in namespace grants its
// subjects what its role says: for code that creates bindings from a
// manifest (the spoke bootstrap file) rather than from rules at hand.
func BindingsGranted(ctx context.Context, cl kubernetes.Interface, namespace string) error {
	rbs, err := cl.RbacV1().RoleBindings(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list RoleBindings in %s: %w", namespace, err)
	}
	for _, rb := range rbs.Items {
		var rules []rbacv1.PolicyRule
		switch rb.RoleRef.Kind {
		case "Role":
			r, err := cl.RbacV1().Roles(namespace).Get(ctx, rb.RoleRef.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("RoleBinding %s/%s: %w", namespace, rb.Name, err)
			}
			rules = r.Rules
		case "ClusterRole":
			r, err := cl.RbacV1().ClusterRoles().Get(ctx, rb.RoleRef.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("RoleBinding %s/%s: %w", namespace, rb.Name, err)
			}
			rules = r.Rules
		}
		for _, s := range rb.Subjects {
			if err := WaitGranted(ctx, cl, namespace, s, rules); err != nil {
				return fmt.Errorf("RoleBinding %s/%s: %w", namespace, rb.Name, err)
			}
		}
	}
	return nil
}

// waitAccess polls SubjectAccessReviews until each of rules' requests is
// answered want, or ctx ends (bounded by RBACTimeout in any case).
func waitAccess(ctx context.Context, cl kubernetes.Interface, namespace string, subject rbacv1.Subject, rules []rbacv1.PolicyRule, want bool) error {
	ctx, cancel := context.WithTimeout(ctx, RBACTimeout)
	defer cancel()
	pending := accessReviews(namespace, subject, rules)
	for {
		var left []authzv1.SubjectAccessReview
		for _, r := range pending {
			got, err := cl.AuthorizationV1().SubjectAccessReviews().Create(ctx, &r, metav1.CreateOptions{})
			if err != nil && !apierrors.IsTooManyRequests(err) && ctx.Err() == nil {
				return fmt.Errorf("SubjectAccessReview for %s: %w", describeReview(r), err)
			}
			if err != nil || got.Status.Allowed != want {
				left = append(left, r)
			}
		}
		if len(left) == 0 {
			return nil
		}
		pending = left
		select {
		case <-ctx.Done():
			what := "granted"
			if !want {
				what = "revoked"
			}
			return fmt.Errorf("RBAC: %s not %s within %v (the API server's authorizer cache did not catch up)", describeReview(pending[0]), what, RBACTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// accessReviews is one SubjectAccessReview per (group, resource, verb)
// of rules, asked as subject would be authenticated.
func accessReviews(namespace string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) []authzv1.SubjectAccessReview {
	var spec authzv1.SubjectAccessReviewSpec
	switch subject.Kind {
	case rbacv1.ServiceAccountKind:
		ns := subject.Namespace
		if ns == "" {
			ns = namespace
		}
		spec.User = "system:serviceaccount:" + ns + ":" + subject.Name
		spec.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	case rbacv1.GroupKind:
		spec.User = "scion-rbac-wait"
		spec.Groups = []string{subject.Name, "system:authenticated"}
	default:
		spec.User = subject.Name
		spec.Groups = []string{"system:authenticated"}
	}
	var out []authzv1.SubjectAccessReview
	add := func(s authzv1.SubjectAccessReviewSpec) {
		s.Groups = append([]string(nil), s.Groups...)
		out = append(out, authzv1.SubjectAccessReview{Spec: s})
	}
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				s := spec
				s.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: u, Verb: verb}
				add(s)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					name := ""
					if len(r.ResourceNames) > 0 {
						name = r.ResourceNames[0]
					}
					resource, sub, _ := strings.Cut(res, "/")
					s := spec
					s.ResourceAttributes = &authzv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: g,
						Resource: resource, Subresource: sub, Name: name}
					add(s)
				}
			}
		}
	}
	return out
}

func describeReview(r authzv1.SubjectAccessReview) string {
	s := r.Spec
	if a := s.NonResourceAttributes; a != nil {
		return fmt.Sprintf("%s %s for %s", a.Verb, a.Path, s.User)
	}
	a := s.ResourceAttributes
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.Group != "" {
		res += "." + a.Group
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in namespace " + a.Namespace
	}
	return fmt.Sprintf("%s %s %s for %s", a.Verb, res, where, s.User)
}
