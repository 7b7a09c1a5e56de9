package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
)

// An agent's secrets (runtime.Spec.SecretEnv: the Hub secrets named at
// its create and its agent token) are not in its pod spec nor in its
// record, which anyone who may read pods or ConfigMaps in the namespace
// reads. They are in a Secret named like the record and owned by it (a
// record deleted by hand takes it along on a cluster with a garbage
// collector; Delete removes it in any case). The pod names them with
// secretKeyRef, which the kubelet resolves when it starts the pod, so a
// Start after SetAgentToken starts the agent with the new token.

const kindSecret = "agent-secret"

// secretEnv is the set of the spec's Env entries that are secrets.
func secretEnv(spec runtime.Spec) map[string]bool {
	set := map[string]bool{}
	for _, k := range spec.SecretEnv {
		if _, ok := spec.Env[k]; ok && k != "HOME" {
			set[k] = true
		}
	}
	return set
}

// envVar is the pod's variable k: a secretKeyRef into the agent's Secret
// (named name, like its pod) for a secret, else the spec's value.
func envVar(spec runtime.Spec, secret map[string]bool, name, k string) corev1.EnvVar {
	if !secret[k] {
		return corev1.EnvVar{Name: k, Value: spec.Env[k]}
	}
	return corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: k}}}
}

// agentSecret is the Secret holding the spec's secret entries, named
// name, or nil when it has none. The keys are the variables' names (a
// Hub secret's name is a valid key; any other name is refused here,
// before anything is made).
func agentSecret(spec runtime.Spec, name string) (*corev1.Secret, error) {
	set := secretEnv(spec)
	if len(set) == 0 {
		return nil, nil
	}
	data := make(map[string][]byte, len(set))
	for k := range set {
		if errs := validation.IsConfigMapKey(k); len(errs) > 0 {
			return nil, fmt.Errorf("kubernetes runtime: secret variable %q cannot be a Secret key: %v", k, errs)
		}
		data[k] = []byte(spec.Env[k])
	}
	lbl := objectLabels(spec.Labels)
	lbl[labelKind] = kindSecret
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}, nil
}

// ownSecret makes sec a dependent of the agent's record.
func ownSecret(sec *corev1.Secret, rec *corev1.ConfigMap) {
	ctrl := true
	sec.Namespace = rec.Namespace
	sec.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: rec.Name, UID: rec.UID, Controller: &ctrl}}
}

// podUsesSecret says whether the record's pod takes key from its Secret.
func podUsesSecret(pod *corev1.Pod, key string) bool {
	for _, c := range pod.Spec.Containers {
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == key && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == pod.Name
		}) {
			return true
		}
	}
	return false
}

// SetAgentToken implements runtime.AgentTokenSetter: the agent's Secret
// gets token, and the pod of the next Start reads it. The running pod, if
// any, keeps its environment (its CLI renews its own token). An agent
// whose record takes no token from a Secret (one made before Secrets
// were used) is left as it is. The write is a merge patch: the runtime
// never reads a Secret back.
func (r *Runtime) SetAgentToken(ctx context.Context, agentID, token string) error {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return err
	}
	defer unlock()
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return err
	}
	pod, err := podOf(rec)
	if err != nil {
		return err
	}
	if !podUsesSecret(pod, api.EnvAgentToken) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"data": map[string][]byte{api.EnvAgentToken: []byte(token)}})
	if err != nil {
		return err
	}
	_, err = t.client.CoreV1().Secrets(t.key.namespace).Patch(ctx, rec.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes runtime: agent %s has no Secret %s/%s (deleted by hand?): its next start cannot run", agentID, t.key.namespace, rec.Name)
	}
	if err != nil {
		return fmt.Errorf("kubernetes runtime: set agent token of %s: %w", agentID, err)
	}
	return nil
}

// deleteSecret removes the agent's Secret; one already gone is fine.
func deleteSecret(ctx context.Context, t *target, agentID, name string) error {
	err := t.client.CoreV1().Secrets(t.key.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes runtime: delete Secret of %s: %w", agentID, err)
	}
	return nil
}
