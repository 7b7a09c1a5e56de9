package jobs

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/scion-go/scion/api"
)

// Bounds of log reads.
const (
	// LiveLogBytes bounds a snapshot read while the Job runs.
	LiveLogBytes = api.MaxJobLogBytes * 4
	// LiveTailLines is where a snapshot read starts (the last lines):
	// pods/log has no "last N bytes", so the runner asks for lines and
	// lowers the count when they do not fit in LiveLogBytes.
	LiveTailLines = 10000
	// FinalLogBytes bounds the read of the whole log at the end, which the
	// result and the trace are parsed from: it holds a full-size trace
	// (base64) with room to spare.
	FinalLogBytes = 16 << 20
	minTailLines  = 16
)

// logFollower keeps the monotonic log snapshot of one Job.
type logFollower struct {
	pod       string // the pod's UID and name: a new pod starts over
	tailLines int64
	// last is the raw text of the last accepted read, whole says whether
	// it was the whole log (not cut by the line count or the byte limit):
	// a whole log only grows, so a shorter whole read of the same pod is
	// a step back (a rotated file, a cut answer) and is ignored.
	last  []byte
	whole bool
	// snapshot is the kept text: last, trace blocks stripped, its tail.
	snapshot string
}

// readLog reads pod's log: tailLines > 0 reads the last lines, limit
// bounds the bytes. whole says whether the answer is the whole log.
func readLog(ctx context.Context, c Clients, ns string, pod *corev1.Pod, tailLines, limit int64) (raw []byte, whole bool, err error) {
	opts := &corev1.PodLogOptions{Container: ContainerName, LimitBytes: &limit}
	if tailLines > 0 {
		opts.TailLines = &tailLines
	}
	raw, err = c.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, opts).DoRaw(ctx)
	if err != nil {
		return nil, false, err
	}
	whole = int64(len(raw)) < limit && (tailLines <= 0 || int64(bytes.Count(raw, []byte("\n"))) < tailLines)
	return raw, whole, nil
}

// live reads a snapshot of a running Job's pod. A failed read changes
// nothing: the previous snapshot stands (the next poll tries again).
func (l *logFollower) live(ctx context.Context, c Clients, ns string, pod *corev1.Pod) {
	if pod == nil {
		return
	}
	l.switchPod(pod)
	raw, whole, err := readLog(ctx, c, ns, pod, l.tailLines, LiveLogBytes)
	if err != nil {
		return
	}
	if int64(len(raw)) >= LiveLogBytes {
		// The last lines did not fit: this answer is their beginning, not
		// the log's end. Ask for fewer, such that they fit, at once.
		n := int64(bytes.Count(raw, []byte("\n"))) / 2
		l.tailLines = max(n, minTailLines)
		if raw2, whole2, err := readLog(ctx, c, ns, pod, l.tailLines, LiveLogBytes); err == nil {
			raw, whole = raw2, whole2
		}
	}
	l.accept(raw, whole)
}

// final reads the whole log once the Job is over (bounded by
// FinalLogBytes; a longer log is read by its last lines instead) and
// returns what the sentinels are parsed from: that read, or, when it
// failed (the pod is gone), the last snapshot read.
func (l *logFollower) final(ctx context.Context, c Clients, ns string, pod *corev1.Pod) []byte {
	if pod == nil {
		return l.last
	}
	l.switchPod(pod)
	raw, whole, err := readLog(ctx, c, ns, pod, 0, FinalLogBytes)
	if err == nil && !whole {
		n := max(int64(bytes.Count(raw, []byte("\n")))/2, minTailLines)
		if raw2, whole2, err2 := readLog(ctx, c, ns, pod, n, FinalLogBytes); err2 == nil {
			raw, whole = raw2, whole2
		}
	}
	if err != nil {
		return l.last
	}
	if !l.accept(raw, whole) {
		return l.last
	}
	return raw
}

func (l *logFollower) switchPod(pod *corev1.Pod) {
	if key := string(pod.UID) + "/" + pod.Name; key != l.pod {
		// A new pod's log starts over: it may be shorter than the last.
		l.pod, l.last, l.whole, l.tailLines = key, nil, false, LiveTailLines
	}
}

// accept takes raw as the new snapshot unless it is a step back.
func (l *logFollower) accept(raw []byte, whole bool) bool {
	if l.last != nil && l.whole && len(raw) < len(l.last) {
		return false
	}
	l.last, l.whole = raw, whole
	l.snapshot = string(Tail(StripTrace(raw), api.MaxJobLogBytes))
	return true
}

// changed returns the snapshot when it differs from the last reported.
func (l *logFollower) changed(prev *string) *string {
	if l.last == nil {
		return nil
	}
	if prev != nil && *prev == l.snapshot {
		return nil
	}
	s := l.snapshot
	return &s
}
