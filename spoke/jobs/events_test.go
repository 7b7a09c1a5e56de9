package jobs

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventMessage(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(1_700_000_000+int64(s), 0)) }
	ev := func(typ, reason, msg string, last int) corev1.Event {
		return corev1.Event{Type: typ, Reason: reason, Message: msg, LastTimestamp: at(last)}
	}
	psa := `Error creating: pods "scion-job-x-abcde" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true`
	for _, tc := range []struct {
		name string
		evs  []corev1.Event
		skip string
		want string
	}{
		{"none", nil, "", ""},
		{"normal only", []corev1.Event{ev(corev1.EventTypeNormal, "SuccessfulCreate", "Created pod", 1)}, "", ""},
		{"failed create", []corev1.Event{ev(corev1.EventTypeWarning, "FailedCreate", psa, 1)}, "admitted, waiting for its pod", "FailedCreate: " + psa},
		{"latest wins", []corev1.Event{
			ev(corev1.EventTypeWarning, "FailedScheduling", "0/1 nodes are available", 5),
			ev(corev1.EventTypeWarning, "Failed", "Failed to pull image \"nope\": not found", 9),
			ev(corev1.EventTypeWarning, "BackOff", "Back-off pulling image", 7),
		}, "pod p pending", `Failed: Failed to pull image "nope": not found`},
		{"reason already said", []corev1.Event{ev(corev1.EventTypeWarning, "ErrImagePull", "x", 1)}, "pod p pending: ErrImagePull: x", ""},
		{"message already said", []corev1.Event{ev(corev1.EventTypeWarning, "FailedScheduling", "0/1 nodes are available: 1 node(s) had untolerated taint", 1)},
			"pod p pending: Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated taint", ""},
		{"whitespace folded", []corev1.Event{ev(corev1.EventTypeWarning, "FailedCreate", "a\n  b", 1)}, "", "FailedCreate: a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EventMessage(tc.evs, tc.skip); got != tc.want {
				t.Errorf("EventMessage = %q, want %q", got, tc.want)
			}
		})
	}
	long := EventMessage([]corev1.Event{ev(corev1.EventTypeWarning, "FailedCreate", strings.Repeat("x", 5000), 1)}, "")
	if len(long) > 500 {
		t.Errorf("an event's message is not bounded: %d bytes", len(long))
	}
}

// TestManifestSecurityContext: a Job's pod meets Pod Security
// "restricted" by default (the agent pods' contexts); a cluster block's
// run_as_user 0 drops runAsNonRoot only.
func TestManifestSecurityContext(t *testing.T) {
	s := testSpec()
	ps := Manifest(s).Spec.Template.Spec
	c := ps.Containers[0].SecurityContext
	if ps.SecurityContext == nil || c == nil {
		t.Fatalf("no security context: pod %+v, container %+v", ps.SecurityContext, c)
	}
	if p := ps.SecurityContext; p.RunAsNonRoot == nil || !*p.RunAsNonRoot || p.RunAsUser == nil || *p.RunAsUser != DefaultRunAsUser ||
		p.RunAsGroup == nil || *p.RunAsGroup != DefaultRunAsUser || p.SeccompProfile == nil || p.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want non-root %d, RuntimeDefault seccomp", p, DefaultRunAsUser)
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation || c.Capabilities == nil ||
		len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" || c.Privileged != nil {
		t.Errorf("container security context %+v: want no escalation, every capability dropped", c)
	}
	root, gid := int64(0), int64(1000)
	s.RunAsUser, s.RunAsGroup = &root, &gid
	p := Manifest(s).Spec.Template.Spec.SecurityContext
	if *p.RunAsNonRoot || *p.RunAsUser != 0 || *p.RunAsGroup != 1000 {
		t.Errorf("run as root: %+v", p)
	}
	back, err := specOf(Manifest(s))
	if err != nil || back.RunAsUser == nil || *back.RunAsUser != 0 || back.RunAsGroup == nil || *back.RunAsGroup != 1000 {
		t.Errorf("specOf does not rebuild the IDs: %+v %v", back, err)
	}
	bad := int64(-1)
	s.RunAsUser = &bad
	if err := Validate(s); err == nil {
		t.Error("a negative run as user was not refused")
	}
}
