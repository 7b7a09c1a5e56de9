package jobs

import (
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scion-go/scion/api"
)

// ManagedBy is LabelManagedBy's value.
const ManagedBy = "scion"

// AnnotationTier records the reachability tier the Job was submitted
// through, so that Owned can rebuild a Spec whole (labels carry the rest).
const AnnotationTier = "scion.dev/tier"

// GPUResource is the extended resource a Spec's GPUs are limits of.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// ContainerName is the Job's one container.
const ContainerName = "job"

// Validate refuses a Spec that would not make a valid, bounded Job, with
// an invalid_request naming the field. Every name that becomes a label
// value or an object name is checked here, so that the spoke's API server
// never gets to refuse it half-way through a submit.
func Validate(s Spec) error {
	if errs := validation.IsDNS1123Label(Name(s.JobID)); s.JobID == "" || len(errs) > 0 {
		return api.BadRequest("job id %s does not make a Job name (a DNS label of at most 63 characters): %s", api.Quote(s.JobID), strings.Join(errs, "; "))
	}
	for _, f := range []struct{ field, v string }{
		{"job id", s.JobID}, {"agent", s.AgentID}, {"broker", s.BrokerID},
	} {
		if f.v == "" {
			return api.BadRequest("job spec: %s is empty", f.field)
		}
		if errs := validation.IsValidLabelValue(f.v); len(errs) > 0 {
			return api.BadRequest("job spec: %s %s is not a label value: %s", f.field, api.Quote(f.v), strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
		return api.BadRequest("job spec: namespace %s is not a DNS label: %s", api.Quote(s.Namespace), strings.Join(errs, "; "))
	}
	// The run's own fields: the rules every layer shares (the Hub and the
	// broker refused a bad value before; a fleet file's default queue is
	// checked with the same rule when it loads).
	for _, err := range []error{api.CheckJobCluster(s.Cluster), api.CheckJobQueue(s.Queue), api.CheckJobImage(s.Image), api.CheckJobCommand(s.Command),
		api.CheckJobEnv(s.Env), api.CheckJobGPUs(s.GPUs), api.CheckJobDeadline(s.Deadline)} {
		if err != nil {
			return api.BadRequest("job spec: %s", api.AsError(err).Message)
		}
	}
	if s.Tier != "" {
		if errs := validation.IsValidLabelValue(s.Tier); len(errs) > 0 {
			return api.BadRequest("job spec: tier %s: %s", api.Quote(s.Tier), strings.Join(errs, "; "))
		}
	}
	if s.TTL < 0 || s.TTL > api.MaxJobDeadline {
		return api.BadRequest("job spec: ttl %v: must be 0-%v", s.TTL, api.MaxJobDeadline)
	}
	for _, id := range []struct {
		field string
		v     *int64
	}{{"run as user", s.RunAsUser}, {"run as group", s.RunAsGroup}} {
		if id.v != nil && (*id.v < 0 || *id.v > 1<<31-1) {
			return api.BadRequest("job spec: %s %d: must be 0-%d", id.field, *id.v, 1<<31-1)
		}
	}
	return nil
}

// security is the pod's and its container's security contexts: those of
// agent pods (runtime/kubernetes), so that a Job's pod is admitted in a
// namespace enforcing Pod Security "restricted": a non-root user, no
// privilege escalation, every capability dropped, the runtime's default
// seccomp profile. Without them the Job controller's pod creates are
// refused there and the Job waits for a pod until its deadline. The root
// filesystem stays writable: a Job has no volume (agent pods write to
// theirs), and "restricted" does not ask for it. RunAsUser 0 drops
// runAsNonRoot only: the image runs as root, and "restricted" refuses it.
func (s Spec) security() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	uid, gid := int64(DefaultRunAsUser), int64(DefaultRunAsUser)
	if s.RunAsUser != nil {
		uid = *s.RunAsUser
	}
	if s.RunAsGroup != nil {
		gid = *s.RunAsGroup
	}
	nonRoot, no := uid != 0, false
	return &corev1.PodSecurityContext{
			RunAsNonRoot:   &nonRoot,
			RunAsUser:      &uid,
			RunAsGroup:     &gid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, &corev1.SecurityContext{
			AllowPrivilegeEscalation: &no,
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
}

// deadline is the Spec's activeDeadlineSeconds: a Job without one would
// lose the backstop of every other bound.
func (s Spec) deadline() time.Duration {
	if s.Deadline <= 0 {
		return api.DefaultJobDeadline
	}
	return s.Deadline
}

func (s Spec) ttl() time.Duration {
	if s.TTL <= 0 {
		return DefaultTTL
	}
	return s.TTL
}

// Labels are the labels of s's Job (and its pod template, so that a pod
// on the spoke says whose it is).
func Labels(s Spec) map[string]string {
	l := map[string]string{
		LabelManagedBy: ManagedBy,
		LabelBroker:    s.BrokerID,
		LabelJobID:     s.JobID,
		LabelAgent:     s.AgentID,
		LabelCluster:   s.Cluster,
	}
	if s.Queue != "" {
		l[LabelQueue] = s.Queue
	}
	return l
}

// Manifest is the Job for s, always suspended: the runner (no queue) or
// Kueue (a queue) admits it. The pod gets no ServiceAccount token, no
// secret and no host path: what it runs is the agent's, and a spoke's
// credentials stay with the broker. One attempt (backoffLimit 0,
// restartPolicy Never): a retry is the agent's decision, not the spoke's.
// Manifest does not validate s (Submit does).
func Manifest(s Spec) *batchv1.Job {
	suspend, no := true, false
	var backoff int32
	deadline := int64(s.deadline() / time.Second)
	ttl := int32(s.ttl() / time.Second)

	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable manifest for the same Spec
	env := make([]corev1.EnvVar, 0, len(keys))
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: s.Env[k]})
	}
	var res corev1.ResourceRequirements
	if s.GPUs > 0 {
		q := *resource.NewQuantity(int64(s.GPUs), resource.DecimalSI)
		res.Limits = corev1.ResourceList{GPUResource: q}
	}
	podSec, ctrSec := s.security()
	podLabels := Labels(s)
	delete(podLabels, LabelQueue) // Kueue reads the Job's, not the pod's
	meta := metav1.ObjectMeta{Name: Name(s.JobID), Namespace: s.Namespace, Labels: Labels(s)}
	if s.Tier != "" {
		meta.Annotations = map[string]string{AnnotationTier: s.Tier}
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			Suspend:                 &suspend,
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: &no,
					EnableServiceLinks:           &no,
					SecurityContext:              podSec,
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           s.Image,
						Command:         append([]string(nil), s.Command...),
						Env:             env,
						Resources:       res,
						SecurityContext: ctrSec,
					}},
				},
			},
		},
	}
}

// specOf rebuilds the Spec a Job of ours was made from (Owned).
func specOf(j *batchv1.Job) (Spec, error) {
	l := j.Labels
	s := Spec{
		JobID: l[LabelJobID], AgentID: l[LabelAgent], BrokerID: l[LabelBroker], Cluster: l[LabelCluster],
		Queue: l[LabelQueue], Tier: j.Annotations[AnnotationTier], Namespace: j.Namespace,
	}
	if s.JobID == "" || Name(s.JobID) != j.Name {
		return Spec{}, fmt.Errorf("job %s/%s: its %s label %q does not name it", j.Namespace, j.Name, LabelJobID, s.JobID)
	}
	if d := j.Spec.ActiveDeadlineSeconds; d != nil {
		s.Deadline = time.Duration(*d) * time.Second
	}
	if t := j.Spec.TTLSecondsAfterFinished; t != nil {
		s.TTL = time.Duration(*t) * time.Second
	}
	if sc := j.Spec.Template.Spec.SecurityContext; sc != nil {
		s.RunAsUser, s.RunAsGroup = sc.RunAsUser, sc.RunAsGroup
	}
	if cs := j.Spec.Template.Spec.Containers; len(cs) > 0 {
		c := cs[0]
		s.Image = c.Image
		s.Command = append([]string(nil), c.Command...)
		if len(c.Env) > 0 {
			s.Env = make(map[string]string, len(c.Env))
			for _, e := range c.Env {
				s.Env[e.Name] = e.Value
			}
		}
		if q, ok := c.Resources.Limits[GPUResource]; ok {
			s.GPUs = int(q.Value())
		}
	}
	return s, nil
}
