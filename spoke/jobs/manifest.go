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
		{"job id", s.JobID}, {"agent", s.AgentID}, {"broker", s.BrokerID}, {"cluster", s.Cluster},
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
	if s.Queue != "" {
		if errs := validation.IsDNS1123Label(s.Queue); len(errs) > 0 {
			return api.BadRequest("job spec: queue %s is not a DNS label: %s", api.Quote(s.Queue), strings.Join(errs, "; "))
		}
	}
	if s.Tier != "" {
		if errs := validation.IsValidLabelValue(s.Tier); len(errs) > 0 {
			return api.BadRequest("job spec: tier %s: %s", api.Quote(s.Tier), strings.Join(errs, "; "))
		}
	}
	if s.Image == "" || len(s.Image) > 1024 || strings.IndexFunc(s.Image, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return api.BadRequest("job spec: image %s: must be 1-1024 characters with no spaces or control characters", api.Quote(s.Image))
	}
	if len(s.Command) == 0 || len(s.Command) > api.MaxJobCommandArgs {
		return api.BadRequest("job spec: command must have 1-%d arguments, not %d", api.MaxJobCommandArgs, len(s.Command))
	}
	n := 0
	for _, a := range s.Command {
		n += len(a)
	}
	if n > api.MaxJobCommandBytes {
		return api.BadRequest("job spec: command is %d bytes, over %d", n, api.MaxJobCommandBytes)
	}
	if s.Command[0] == "" {
		return api.BadRequest("job spec: command's program is empty")
	}
	if len(s.Env) > api.MaxJobEnv {
		return api.BadRequest("job spec: %d environment variables, over %d", len(s.Env), api.MaxJobEnv)
	}
	for k, v := range s.Env {
		if errs := validation.IsEnvVarName(k); len(errs) > 0 || strings.ContainsAny(k, "=\x00") {
			return api.BadRequest("job spec: environment variable name %s: %s", api.Quote(k), strings.Join(errs, "; "))
		}
		if len(v) > api.MaxJobEnvValueBytes {
			return api.BadRequest("job spec: environment variable %s is %d bytes, over %d", k, len(v), api.MaxJobEnvValueBytes)
		}
	}
	if s.GPUs < 0 || s.GPUs > api.MaxJobGPUs {
		return api.BadRequest("job spec: gpus %d: must be 0-%d", s.GPUs, api.MaxJobGPUs)
	}
	if s.Deadline < 0 || s.Deadline > api.MaxJobDeadline || (s.Deadline > 0 && s.Deadline < time.Second) {
		return api.BadRequest("job spec: deadline %v: must be 1s-%v (0: %v)", s.Deadline, api.MaxJobDeadline, api.DefaultJobDeadline)
	}
	if s.TTL < 0 || s.TTL > api.MaxJobDeadline {
		return api.BadRequest("job spec: ttl %v: must be 0-%v", s.TTL, api.MaxJobDeadline)
	}
	return nil
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
					Containers: []corev1.Container{{
						Name:      ContainerName,
						Image:     s.Image,
						Command:   append([]string(nil), s.Command...),
						Env:       env,
						Resources: res,
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
