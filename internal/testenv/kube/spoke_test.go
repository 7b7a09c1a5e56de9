package kube

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestMain(m *testing.M) { os.Exit(SpokeMain(m, SpokeOptions{RunFor: 500 * time.Millisecond})) }

// testJob is a Job as the runner makes one: one attempt, restartPolicy
// Never, env for the fake kubelet.
func testJob(name string, env map[string]string) *batchv1.Job {
	var backoff int32
	var ev []corev1.EnvVar
	for k, v := range env {
		ev = append(ev, corev1.EnvVar{Name: k, Value: v})
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "example.invalid/train:1", Env: ev}},
			}},
		},
	}
}

// waitFor polls cond every 100 ms for up to a minute.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within a minute (last error: %v)", what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func jobCondition(t *testing.T, c kubernetes.Interface, ns, name string, typ batchv1.JobConditionType) {
	t.Helper()
	waitFor(t, "job "+name+" "+string(typ), func(ctx context.Context) (bool, error) {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cd := range j.Status.Conditions {
			if cd.Type == typ && cd.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func jobPod(t *testing.T, c kubernetes.Interface, ns, job string) corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("pods of job %s: %v, %d pods", job, err, len(l.Items))
	}
	return l.Items[0]
}

func TestSpokeJobSucceedsWithLog(t *testing.T) {
	s := NeedSpoke(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	log := "step 1\n::scion-result:: {\"loss\": 0.12}\n"
	s.SetJobLog(t, ns, "ok", log)
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, testJob("ok", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, s.Client, ns, "ok", batchv1.JobComplete)
	p := jobPod(t, s.Client, ns, "ok")
	if p.Status.Phase != corev1.PodSucceeded || p.Spec.NodeName != FakeNode {
		t.Fatalf("pod %s: phase %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	if st := p.Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("container statuses: %+v", st)
	}
	got, err := s.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pods/log: %v", err)
	}
	if string(got) != log {
		t.Fatalf("pods/log = %q, want %q", got, log)
	}
	// Appended lines are read back too (a log followed while it grows).
	s.AppendJobLog(t, ns, "ok", "more")
	got, err = s.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || string(got) != log+"more\n" {
		t.Fatalf("pods/log after append = %q, %v", got, err)
	}
}

func TestSpokeJobFailsWithExitCode(t *testing.T) {
	s := NeedSpoke(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, testJob("bad", map[string]string{EnvFakeExit: "3"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, s.Client, ns, "bad", batchv1.JobFailed)
	p := jobPod(t, s.Client, ns, "bad")
	st := p.Status.ContainerStatuses
	if p.Status.Phase != corev1.PodFailed || len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 3 {
		t.Fatalf("pod %s: phase %s, statuses %+v", p.Name, p.Status.Phase, st)
	}
	// Unwritten, a log reads as empty, not as an error.
	got, err := s.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("pods/log of a silent pod = %q, %v", got, err)
	}
}

func TestSpokeFakeDurationKeepsPodRunning(t *testing.T) {
	s := NeedSpoke(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, testJob("long", map[string]string{EnvFakeDuration: "1h"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod running", func(ctx context.Context) (bool, error) {
		l, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 1 && l.Items[0].Status.Phase == corev1.PodRunning, err
	})
	// Deleting the Job takes its pod with it (garbage collector, then
	// kwok finishes the pod's graceful deletion).
	bg := metav1.DeletePropagationBackground
	if err := s.Client.BatchV1().Jobs(ns).Delete(ctx, "long", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod deleted", func(ctx context.Context) (bool, error) {
		l, err := s.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})
}

func TestSpokeTTLDeletesFinishedJob(t *testing.T) {
	s := NeedSpoke(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	j := testJob("ttl", nil)
	ttl := int32(1)
	j.Spec.TTLSecondsAfterFinished = &ttl
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Complete, or already gone: the TTL controller deletes only a
	// finished Job, and with a TTL of one second it may do so between two
	// polls (a loaded CI run saw only "not found").
	waitFor(t, "job ttl complete (or deleted after its TTL)", func(ctx context.Context) (bool, error) {
		j, err := s.Client.BatchV1().Jobs(ns).Get(ctx, "ttl", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		for _, cd := range j.Status.Conditions {
			if cd.Type == batchv1.JobComplete && cd.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	waitFor(t, "job deleted after its TTL", func(ctx context.Context) (bool, error) {
		_, err := s.Client.BatchV1().Jobs(ns).Get(ctx, "ttl", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func TestAdmitterAdmitsQueuedJob(t *testing.T) {
	s := NeedSpoke(t)
	ns := s.Namespace(t)
	ctx := context.Background()
	a := s.StartAdmitter(t, ns)
	a.Hold(true)
	j := testJob("queued", nil)
	j.Labels = map[string]string{QueueLabel: "h200"}
	yes := true
	j.Spec.Suspend = &yes
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "workload pending", func(ctx context.Context) (bool, error) {
		wl, err := a.Workload(ctx, "queued")
		if err != nil || wl == nil {
			return false, err
		}
		return conditionStatus(wl, "QuotaReserved") == "False", a.Err()
	})
	// Held, the Job stays suspended: no pod.
	if got, _ := s.Client.BatchV1().Jobs(ns).Get(ctx, "queued", metav1.GetOptions{}); got.Spec.Suspend == nil || !*got.Spec.Suspend {
		t.Fatal("held job was unsuspended")
	}
	a.Hold(false)
	jobCondition(t, s.Client, ns, "queued", batchv1.JobComplete)
	waitFor(t, "workload admitted and finished", func(ctx context.Context) (bool, error) {
		wl, err := a.Workload(ctx, "queued")
		if err != nil || wl == nil {
			return false, err
		}
		if q, _ := wl.Object["spec"].(map[string]any)["queueName"].(string); q != "h200" {
			t.Fatalf("workload queueName %q", q)
		}
		return hasCondition(wl, "Admitted") && hasCondition(wl, "Finished"), a.Err()
	})
	// Jobs without the queue label are left alone.
	plain := testJob("plain", nil)
	plain.Spec.Suspend = &yes
	if _, err := s.Client.BatchV1().Jobs(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if wl, err := a.Workload(ctx, "plain"); err != nil || wl != nil {
		t.Fatalf("workload for an unlabelled job: %v, %v", wl, err)
	}
}

func TestBootstrapSpokeTokenPermissions(t *testing.T) {
	s := NeedSpoke(t)
	ns := "boot-" + s.prefix
	kc := s.BootstrapSpoke(t, ns)
	for _, bad := range []string{"certificate-authority:", "tokenFile", "exec:"} {
		if strings.Contains(string(kc), bad) {
			t.Fatalf("kubeconfig not self-contained (%s):\n%s", bad, kc)
		}
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.BatchV1().Jobs(ns).Create(ctx, testJob("by-broker", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("jobs create with the bootstrap token: %v", err)
	}
	jobCondition(t, c, ns, "by-broker", batchv1.JobComplete)
	p := jobPod(t, c, ns, "by-broker")
	if _, err := c.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil {
		t.Fatalf("pods/log with the bootstrap token: %v", err)
	}
	if _, err := c.CoreV1().Secrets(ns).Get(ctx, BootstrapTokenSecret, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("secrets get with the bootstrap token: %v, want forbidden", err)
	}
	// The admin may (the refusal above is RBAC's, not a missing Secret).
	acfg, err := clientcmd.RESTConfigFromKubeConfig(s.AdminKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(acfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets(ns).Get(ctx, BootstrapTokenSecret, metav1.GetOptions{}); err != nil {
		t.Fatalf("secrets get as the admin: %v", err)
	}
	other := s.Namespace(t)
	if _, err := c.BatchV1().Jobs(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("jobs list in another namespace: %v, want forbidden", err)
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "direct"}, Spec: p.Spec}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("pods create with the bootstrap token: %v, want forbidden", err)
	}
}

func TestSpokeVersionsMatchScript(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot(t), ".ci", "kube-apiserver.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"KWOK_VERSION": KwokVersion, "KUEUE_VERSION": KueueVersion} {
		m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf(".ci/kube-apiserver.sh %s = %q, the fixture says %s", name, m, want)
		}
	}
}

func TestCRILog(t *testing.T) {
	now := time.Date(2026, 12, 1, 17, 0, 0, 5, time.UTC)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a", "2026-12-01T17:00:00.000000005Z stdout F a\n"},
		{"a\nb\n", "2026-12-01T17:00:00.000000005Z stdout F a\n2026-12-01T17:00:00.000000005Z stdout F b\n"},
		{"\n", "2026-12-01T17:00:00.000000005Z stdout F \n"},
	} {
		if got := criLog(tc.in, now); got != tc.want {
			t.Errorf("criLog(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStagesConfigDecodes(t *testing.T) {
	objs, err := decodeYAML(stagesConfig(SpokeOptions{}.withDefaults()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		if o.GetKind() != "Stage" {
			t.Errorf("kind %s", o.GetKind())
		}
		names = append(names, o.GetName())
	}
	if len(objs) != 5 {
		t.Fatalf("stages %v", names)
	}
	if m := regexp.MustCompile(`\$[A-Z_]+`).Find(stagesConfig(SpokeOptions{})); m != nil {
		t.Fatalf("placeholder %s left", m)
	}
}

func TestDarkURL(t *testing.T) {
	c := &Cluster{URL: "https://127.0.0.1:6443"}
	if got := c.DarkURL(); got != "https://"+DarkHost+":6443" {
		t.Fatalf("DarkURL = %s", got)
	}
}
