package jobs

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Why a Job waits is often only in its events: the Job controller's pod
// creates refused (FailedCreate: a Pod Security violation, a quota), the
// scheduler's FailedScheduling, the kubelet's image pull errors. A Job
// that waits for a pod reads the Warning events of the Job and of its
// newest pod at each poll, and its message carries the latest one, so
// that nobody waits for a deadline to learn a pod will never be made.

// maxEvents bounds each events list (a Job's own warnings are few: the
// event recorder aggregates repeats into one event's count).
const maxEvents = 50

// warningEvents lists the Warning events about the objects of uids. A
// failed list is none: events only make the message better, they decide
// nothing (a Role without events get/list loses the messages only).
func warningEvents(ctx context.Context, kc kubernetes.Interface, namespace string, uids ...types.UID) []corev1.Event {
	var out []corev1.Event
	for _, uid := range uids {
		if uid == "" {
			continue
		}
		sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(uid)),
			fields.OneTermEqualSelector("type", corev1.EventTypeWarning))
		l, err := kc.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String(), Limit: maxEvents})
		if err != nil {
			continue
		}
		out = append(out, l.Items...)
	}
	return out
}

// EventMessage is the latest Warning event among evs as "Reason:
// message" (clipped), or "" when there is none. An event whose reason
// the message already names (the pod's waiting reason) is not repeated:
// skip names them.
func EventMessage(evs []corev1.Event, skip string) string {
	var latest *corev1.Event
	var at time.Time
	for i := range evs {
		e := &evs[i]
		if e.Type != corev1.EventTypeWarning || e.Reason == "" {
			continue
		}
		if t := eventTime(e); latest == nil || t.After(at) {
			latest, at = e, t
		}
	}
	if latest == nil {
		return ""
	}
	m := strings.Join(strings.Fields(latest.Message), " ")
	if strings.Contains(skip, latest.Reason) || (len(m) >= 20 && strings.Contains(skip, strings.TrimSuffix(clip(m, 40), "..."))) {
		return "" // the pod's own status said it already (its scheduling condition)
	}
	msg := clip(latest.Reason, 63)
	if m != "" {
		msg += ": " + clip(m, 400)
	}
	return msg
}

// eventTime is when an event last happened: the series' or the last
// timestamp (aggregated repeats), else its first, else its creation.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
