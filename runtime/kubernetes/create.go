package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
)

// Create implements runtime.Runtime. It validates the agent's pod with a
// server-side dry run (so a pod the API server would refuse, or that names
// a missing priority class or service account, fails here, at Create, and
// not at Start), then makes the agent's record and the claims its volumes
// need. No pod exists until Start.
func (r *Runtime) Create(ctx context.Context, spec runtime.Spec) (runtime.Status, error) {
	if err := r.checkOpen(); err != nil {
		return runtime.Status{}, err
	}
	if spec.BrokerID == "" {
		spec.BrokerID = r.opts.BrokerID
	}
	if spec.BrokerID != r.opts.BrokerID {
		return runtime.Status{}, fmt.Errorf("kubernetes runtime: spec is for broker %q, this runtime is %q", spec.BrokerID, r.opts.BrokerID)
	}
	if err := checkIdentity(spec); err != nil {
		return runtime.Status{}, err
	}
	spec.Labels = runtime.SpecLabels(spec)
	settings, err := r.settingsFor(spec)
	if err != nil {
		return runtime.Status{}, err
	}
	unlock, err := r.locks.Lock(ctx, spec.AgentID)
	if err != nil {
		return runtime.Status{}, err
	}
	defer unlock()
	if _, _, err := r.findRecord(ctx, spec.AgentID); err == nil {
		return runtime.Status{}, fmt.Errorf("kubernetes runtime: agent %q already exists", spec.AgentID)
	} else if !errors.Is(err, runtime.ErrNotFound) {
		return runtime.Status{}, err
	}
	t, err := r.target(settings)
	if err != nil {
		return runtime.Status{}, err
	}
	name := objectName(spec.BrokerID, spec.AgentID, spec.Slug)
	pod, claims, err := buildPod(podInput{spec: spec, settings: settings, name: name, claimPrefix: name + "-" + nonce(),
		stopGrace:  r.opts.StopGrace,
		scionImage: r.opts.ScionImage, imageVolume: r.opts.ImageVolume,
		hostUID: os.Getuid(), hostGID: os.Getgid()})
	if err != nil {
		return runtime.Status{}, err
	}
	pod.Namespace = t.key.namespace
	pods := t.client.CoreV1().Pods(t.key.namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		return runtime.Status{}, fmt.Errorf("kubernetes runtime: the API server refuses agent %s's pod: %w", spec.AgentID, err)
	}
	sec, err := agentSecret(spec, name)
	if err != nil {
		return runtime.Status{}, err
	}
	secrets := t.client.CoreV1().Secrets(t.key.namespace)
	if sec != nil {
		// Validated (and a Secret of that name, not this agent's, found)
		// before anything is made.
		sec.Namespace = t.key.namespace
		if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			return runtime.Status{}, fmt.Errorf("kubernetes runtime: the API server refuses agent %s's Secret: %w", spec.AgentID, err)
		}
	}
	rec, err := newRecord(pod)
	if err != nil {
		return runtime.Status{}, err
	}
	rec, err = t.client.CoreV1().ConfigMaps(t.key.namespace).Create(ctx, rec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return runtime.Status{}, fmt.Errorf("kubernetes runtime: agent %q already exists (record %s/%s)", spec.AgentID, t.key.namespace, name)
	}
	if err != nil {
		return runtime.Status{}, fmt.Errorf("kubernetes runtime: create record of %s: %w", spec.AgentID, err)
	}
	if sec != nil {
		ownSecret(sec, rec)
		if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			// Only the record is made (a Secret that exists is not ours
			// to delete).
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_ = t.client.CoreV1().ConfigMaps(t.key.namespace).Delete(dctx, rec.Name, metav1.DeleteOptions{})
			cancel()
			return runtime.Status{}, fmt.Errorf("kubernetes runtime: create Secret of %s: %w", spec.AgentID, err)
		}
	}
	if err := r.createClaims(ctx, t, rec, spec, claims); err != nil {
		// Leave nothing half made: a retried create starts clean.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		r.deleteObjects(dctx, t, spec.AgentID, rec.Name)
		cancel()
		return runtime.Status{}, err
	}
	r.mu.Lock()
	r.where[spec.AgentID] = t
	delete(r.gone, spec.AgentID)
	r.mu.Unlock()
	return statusOf(rec, nil), nil
}

// nonce is six random lowercase hex digits.
func nonce() string {
	var b [3]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// createClaims makes the claims the pod's volumes need. An agent's own
// claims carry its identity and are owned by its record; project and share
// claims that exist already are left as they are (another agent of the
// project, or an earlier one, made them).
func (r *Runtime) createClaims(ctx context.Context, t *target, rec *corev1.ConfigMap, spec runtime.Spec, claims []*corev1.PersistentVolumeClaim) error {
	api := t.client.CoreV1().PersistentVolumeClaims(t.key.namespace)
	for _, c := range claims {
		c = c.DeepCopy()
		c.Namespace = t.key.namespace
		switch c.Labels[labelClaimScope] {
		case scopeAgent:
			for k, v := range rec.Labels {
				if k != labelKind {
					c.Labels[k] = v
				}
			}
			ctrl := true
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: rec.Name, UID: rec.UID, Controller: &ctrl}}
		case scopeProject:
			if validID(spec.ProjectID) {
				c.Labels[runtime.LabelProjectID] = spec.ProjectID
			}
		}
		_, err := api.Create(ctx, c, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && c.Labels[labelClaimScope] != scopeAgent {
			continue
		}
		if err != nil {
			return fmt.Errorf("kubernetes runtime: create claim %s/%s for %s: %w", t.key.namespace, c.Name, spec.AgentID, err)
		}
	}
	return nil
}

// Delete implements runtime.Runtime: the pod (at once, without grace, as
// a Docker force-remove), the agent's own claims and its record. Project
// claims and the NFS share's claim stay for the project's other agents.
func (r *Runtime) Delete(ctx context.Context, agentID string) error {
	unlock, err := r.locks.Lock(ctx, agentID)
	if err != nil {
		return err
	}
	defer unlock()
	t, rec, err := r.findRecord(ctx, agentID)
	if err != nil {
		return err
	}
	r.setGone(agentID, true)
	if err := r.deleteObjects(ctx, t, agentID, rec.Name); err != nil {
		r.setGone(agentID, false)
		return err
	}
	r.mu.Lock()
	delete(r.where, agentID)
	delete(r.last, agentID)
	r.mu.Unlock()
	return nil
}

// deleteObjects removes an agent's pod, its own claims, its Secret and
// its record;
// what is already gone is not an error.
func (r *Runtime) deleteObjects(ctx context.Context, t *target, agentID, name string) error {
	zero := int64(0)
	core := t.client.CoreV1()
	err := core.Pods(t.key.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes runtime: delete pod of %s: %w", agentID, err)
	}
	claims, err := core.PersistentVolumeClaims(t.key.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: r.selector(agentID, "") + "," + labelClaimScope + "=" + scopeAgent})
	if err != nil {
		return fmt.Errorf("kubernetes runtime: list claims of %s: %w", agentID, err)
	}
	for _, c := range claims.Items {
		err := core.PersistentVolumeClaims(t.key.namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("kubernetes runtime: delete claim %s of %s: %w", c.Name, agentID, err)
		}
	}
	// The Secret before the record: a record left by a failed delete
	// still names what is left to delete.
	if err := deleteSecret(ctx, t, agentID, name); err != nil {
		return err
	}
	err = core.ConfigMaps(t.key.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes runtime: delete record of %s: %w", agentID, err)
	}
	return nil
}

// setGone marks an agent that Delete removes: the watch's news of its
// pod going (which may arrive after Delete has returned) is not an exit
// to report. Create of the same ID clears the mark.
func (r *Runtime) setGone(agentID string, gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gone {
		r.gone[agentID] = true
	} else {
		delete(r.gone, agentID)
	}
}
