package kube

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RuntimeRules are the namespace-scoped permissions the runtime needs,
// and no more: a Role with these rules, bound to the broker's identity in
// each namespace its profiles name, lets every runtime operation work.
// Secrets: create, patch and delete only, for the agents' own Secrets
// (their Hub secrets and tokens, out of the pod spec). RBAC cannot limit
// create to names the runtime makes, nor patch and delete to names not
// known in advance; a patch answers with the whole Secret, so the broker
// can in effect read a Secret it can name (not list or watch them). Run
// agents in a namespace that holds no other Secrets. Note that
// pods/create is itself as powerful (a pod can mount any Secret of its
// namespace), which is why the agents' pods run as a different account
// (SandboxServiceAccount) that has no permissions at all.
//
// These are the Role and the account docs/kubernetes.md gives operators
// ("Permissions"); runtime/kubernetes's tests run every operation under
// exactly them, so a new call the runtime makes fails there until both
// this and the docs grant it. The runtime itself never makes them.
func RuntimeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Agents' pods: made at Start, deleted at Stop and Delete, watched
		// for Events, listed for Inventory.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		// Output, exec and attach (over WebSockets a GET, SPDY a POST).
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/attach"}, Verbs: []string{"get", "create"}},
		// Agents' records: what to run at each Start and how it last ended.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
		// Workspace, home and shared-directory claims.
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "create", "delete"}},
		// Agents' Secrets, named like their records: made at Create, the
		// agent token replaced (a merge patch, nothing read) before each
		// start, deleted at Delete. No get, list or watch: the runtime
		// never reads one.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "patch", "delete"}},
	}
}

// RuntimeRole is a Role named name in namespace with RuntimeRules.
func RuntimeRole(namespace, name string) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: RuntimeRules()}
}

// SandboxServiceAccount is the account agents' pods run as: bound to no
// Role, and with automountServiceAccountToken false, so that no token
// lands in a pod even if a pod spec asked for one. Operators create it (and nothing
// for it) in each namespace agents run in; its name is the
// service_account setting, runtime/kubernetes.DefaultServiceAccount by
// default.
func SandboxServiceAccount(namespace, name string) *corev1.ServiceAccount {
	no := false
	return &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Namespace: namespace, Name: name},
		AutomountServiceAccountToken: &no,
	}
}
