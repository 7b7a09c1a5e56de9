package kubernetes

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scion-go/scion/runtime"
)

// podInput is everything buildPod decides from: the spec, its resolved
// settings and the runtime-wide options that shape every pod.
type podInput struct {
	spec        runtime.Spec
	settings    Settings
	name        string
	claimPrefix string // of the agent's own claims: unique to this Create
	stopGrace   time.Duration
	scionImage  string // an image holding the static scion binary at scionBinPath
	imageVolume bool   // mount scionImage as an image volume instead of copying
	// hostUID and hostGID are the broker's own IDs: on an NFS share the
	// files it made are theirs, so its agents default to them.
	hostUID, hostGID int
}

// buildPod returns the agent's pod and the claims its volumes need. It is
// pure: the API server validates the result, tests check it without one.
func buildPod(in podInput) (*corev1.Pod, []*corev1.PersistentVolumeClaim, error) {
	spec, s := in.spec, in.settings
	if err := s.validate(); err != nil {
		return nil, nil, err
	}
	st, err := storageFor(spec, spec.Labels[LabelSharingMode], s, cmp.Or(in.claimPrefix, in.name))
	if err != nil {
		return nil, nil, err
	}
	res, err := resources(spec.Labels, isTrue(s.GKE))
	if err != nil {
		return nil, nil, err
	}
	labelsJSON, err := json.Marshal(spec.Labels)
	if err != nil {
		return nil, nil, err
	}
	annotations := map[string]string{annoLabels: string(labelsJSON)}
	for k, v := range st.annotations {
		annotations[k] = v
	}
	if s.SafeToEvict != nil {
		annotations[annoSafeToEvict] = strconv.FormatBool(*s.SafeToEvict)
	}
	env := []corev1.EnvVar{{Name: "HOME", Value: homePath}}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		if k != "HOME" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	secret := secretEnv(spec) // from the agent's Secret: not in the spec (secret.go)
	for _, k := range keys {
		e := envVar(spec, secret, in.name, k)
		if k == "PATH" && in.scionImage != "" && e.ValueFrom == nil {
			e.Value = runtime.PathWith(e.Value, path.Dir(scionBinPath))
		}
		env = append(env, e)
	}
	// No PATH unless the spec names one: the image's own applies (the
	// broker does not know it), and the scion binary is mounted in
	// /usr/local/bin, which is on the container runtime's default PATH
	// and on that of every common base image.
	sec := podSecurity(s, in.hostUID, in.hostGID)
	if *sec.container.ReadOnlyRootFilesystem {
		// A read-only root: the harness still needs a scratch directory
		// (the home and workspace are volumes already).
		st.volumes = append(st.volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		st.mounts = append(st.mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	}
	no := false
	agent := corev1.Container{
		Name:            "agent",
		Image:           spec.Image,
		Command:         spec.Command,
		Env:             env,
		WorkingDir:      workspacePath,
		VolumeMounts:    st.mounts,
		Resources:       res,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// Kept open so that an attach can write to the agent, as on Docker.
		Stdin:           true,
		TTY:             spec.Labels[LabelTTY] == "true",
		SecurityContext: sec.container,
	}
	grace := int64(math.Ceil(cmp.Or(in.stopGrace, 10*time.Second).Seconds()))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: in.name, Labels: objectLabels(spec.Labels), Annotations: annotations},
		Spec: corev1.PodSpec{
			// A dedicated account with no permissions, and no token in the
			// pod: the agent cannot talk to the API server as anyone, so
			// it cannot read the namespace's Secrets (the broker's).
			ServiceAccountName:           cmp.Or(s.ServiceAccount, DefaultServiceAccount),
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			// The agent's exit is final for this pod; Start makes a new one.
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			PriorityClassName:             s.PriorityClass,
			Volumes:                       st.volumes,
			SecurityContext:               sec.pod,
		},
	}
	if in.scionImage != "" {
		addScionBinary(pod, &agent, in.scionImage, in.imageVolume, sec.container)
	}
	pod.Spec.Containers = []corev1.Container{agent}
	return pod, st.claims, nil
}

// addScionBinary makes the static scion binary of image (at
// /usr/local/bin/scion there, as in the demo image) available read-only
// at the same path in the agent: from an image volume (Kubernetes 1.33+,
// nothing copied), or copied by an init container into an emptyDir that
// the agent mounts read-only.
func addScionBinary(pod *corev1.Pod, agent *corev1.Container, image string, imageVolume bool, sec *corev1.SecurityContext) {
	const vol = "scion-bin"
	mount := corev1.VolumeMount{Name: vol, MountPath: scionBinPath, SubPath: "scion", ReadOnly: true}
	if imageVolume {
		mount.SubPath = strings.TrimPrefix(scionBinPath, "/")
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullIfNotPresent}}})
	} else {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name:            "scion-bin",
			Image:           image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			// The scion binary copies itself: the image needs no shell.
			Command:      []string{scionBinPath, "install-binary", "/opt/scion/scion"},
			VolumeMounts: []corev1.VolumeMount{{Name: vol, MountPath: "/opt/scion"}},
			// As confined as the agent, and as the same user, so that
			// the copy is the agent's to run.
			SecurityContext: sec.DeepCopy(),
		})
	}
	agent.VolumeMounts = append(agent.VolumeMounts, mount)
}

// resources turns the scion.memory and scion.cpus labels into limits. In
// GKE mode requests equal limits, as Autopilot sets them anyway, and an
// ephemeral-storage request keeps the pod off the smallest default.
func resources(labels map[string]string, gke bool) (corev1.ResourceRequirements, error) {
	lim := corev1.ResourceList{}
	if v := labels[LabelMemory]; v != "" {
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: want a size such as 512m or 2g", LabelMemory, v)
		}
		lim[corev1.ResourceMemory] = *resource.NewQuantity(n, resource.BinarySI)
	}
	if v := labels[LabelCPUs]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1024 {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: want a number of CPUs such as 1.5", LabelCPUs, v)
		}
		lim[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(math.Round(f*1000)), resource.DecimalSI)
	}
	var rr corev1.ResourceRequirements
	if len(lim) > 0 {
		rr.Limits = lim
	}
	if gke {
		rr.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		for k, v := range lim {
			rr.Requests[k] = v
		}
	}
	return rr, nil
}
