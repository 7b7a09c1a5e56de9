package kubernetes

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
)

// projectClaimKinds are the claims a project can have in a namespace
// (storageFor): the shared checkout, the worktree base clone and the
// shared directory.
var projectClaimKinds = []string{"workspace", "base", "shared-dir"}

// CleanupProject implements runtime.ProjectCleaner: it deletes the
// project's claims in every namespace this runtime uses (its profiles'
// and those of the agents it has seen), and returns them as
// "namespace/name". Claims are found by name, which is derived from the
// project ID alone, and deleted only if they carry the project scope
// label (a claim of that name made by someone else is left alone). A claim
// still mounted by a pod stays until that pod is gone (the API server's
// pvc-protection finalizer), which is also how two brokers sharing a
// namespace never pull a claim from under a running agent.
func (r *Runtime) CleanupProject(ctx context.Context, projectID string) ([]string, error) {
	if err := r.checkOpen(); err != nil {
		return nil, err
	}
	if projectID == "" {
		return nil, fmt.Errorf("kubernetes runtime: CleanupProject needs a project ID")
	}
	var removed []string
	for _, t := range r.allTargets() {
		claims := t.client.CoreV1().PersistentVolumeClaims(t.key.namespace)
		for _, what := range projectClaimKinds {
			name := projectClaimName(projectID, what)
			c, err := claims.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return removed, fmt.Errorf("kubernetes runtime: get claim %s/%s: %w", t.key.namespace, name, err)
			}
			if c.Labels[labelClaimScope] != scopeProject || c.DeletionTimestamp != nil {
				continue // not ours, or on its way out already
			}
			uid := c.UID
			err = claims.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue // gone already, or replaced: not the claim we looked at
			}
			if err != nil {
				return removed, fmt.Errorf("kubernetes runtime: delete claim %s/%s: %w", t.key.namespace, name, err)
			}
			removed = append(removed, t.key.namespace+"/"+name)
		}
	}
	return removed, nil
}

var _ runtime.ProjectCleaner = (*Runtime)(nil)
