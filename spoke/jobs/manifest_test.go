package jobs

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/scion-go/scion/api"
)

func testSpec() Spec {
	return Spec{
		JobID: "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", AgentID: "agent-1", BrokerID: "broker-a",
		Cluster: "b200", Tier: "bastion", Namespace: "gpu-jobs",
		Image: "registry.example/train:1", Command: []string{"python", "train.py"},
		Env: map[string]string{"B": "2", "A": "1"}, GPUs: 2, Deadline: 90 * time.Minute,
	}
}

func TestManifest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		check func(t *testing.T, s Spec)
	}{
		{"full", func(*Spec) {}, nil},
		{"queue label", func(s *Spec) { s.Queue = "h200" }, nil},
		{"no gpus, default ttl and deadline", func(s *Spec) { s.GPUs, s.Deadline, s.TTL = 0, 0, 0 }, nil},
		{"ttl", func(s *Spec) { s.TTL = 10 * time.Minute }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			tc.edit(&s)
			if err := Validate(s); err != nil {
				t.Fatal(err)
			}
			j := Manifest(s)
			if j.Name != "scion-job-"+s.JobID || j.Namespace != s.Namespace {
				t.Errorf("name %s/%s", j.Namespace, j.Name)
			}
			want := map[string]string{LabelManagedBy: "scion", LabelBroker: s.BrokerID, LabelJobID: s.JobID, LabelAgent: s.AgentID, LabelCluster: s.Cluster}
			if s.Queue != "" {
				want[LabelQueue] = s.Queue
			}
			if len(j.Labels) != len(want) {
				t.Errorf("labels %v, want %v", j.Labels, want)
			}
			for k, v := range want {
				if j.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, j.Labels[k], v)
				}
			}
			if _, ok := j.Spec.Template.Labels[LabelQueue]; ok {
				t.Error("the pod template carries the queue label")
			}
			if j.Annotations[AnnotationTier] != s.Tier {
				t.Errorf("tier annotation %v", j.Annotations)
			}
			if j.Spec.Suspend == nil || !*j.Spec.Suspend {
				t.Error("not suspended at create")
			}
			if *j.Spec.BackoffLimit != 0 {
				t.Errorf("backoffLimit %d", *j.Spec.BackoffLimit)
			}
			wantDL := s.Deadline
			if wantDL == 0 {
				wantDL = api.DefaultJobDeadline
			}
			if got := *j.Spec.ActiveDeadlineSeconds; got != int64(wantDL/time.Second) {
				t.Errorf("activeDeadlineSeconds %d, want %v", got, wantDL)
			}
			wantTTL := s.TTL
			if wantTTL == 0 {
				wantTTL = DefaultTTL
			}
			if got := *j.Spec.TTLSecondsAfterFinished; got != int32(wantTTL/time.Second) {
				t.Errorf("ttlSecondsAfterFinished %d, want %v", got, wantTTL)
			}
			ps := j.Spec.Template.Spec
			if ps.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy %s", ps.RestartPolicy)
			}
			if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
				t.Error("the ServiceAccount token is mounted")
			}
			if ps.ServiceAccountName != "" || len(ps.Volumes) > 0 || len(ps.ImagePullSecrets) > 0 || ps.HostNetwork || ps.HostPID {
				t.Errorf("pod spec has more than asked: %+v", ps)
			}
			if len(ps.Containers) != 1 {
				t.Fatalf("%d containers", len(ps.Containers))
			}
			c := ps.Containers[0]
			if c.Image != s.Image || strings.Join(c.Command, " ") != strings.Join(s.Command, " ") || len(c.Args) > 0 {
				t.Errorf("container %+v", c)
			}
			if len(c.EnvFrom) > 0 || len(c.VolumeMounts) > 0 {
				t.Errorf("container has env from or mounts: %+v", c)
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil {
					t.Errorf("env %s from a source", e.Name)
				}
			}
			if len(c.Env) != len(s.Env) || (len(c.Env) == 2 && (c.Env[0].Name != "A" || c.Env[1].Name != "B")) {
				t.Errorf("env %v (want sorted %v)", c.Env, s.Env)
			}
			q, ok := c.Resources.Limits[GPUResource]
			if s.GPUs > 0 && (!ok || q.Value() != int64(s.GPUs)) {
				t.Errorf("gpu limit %v, want %d", c.Resources.Limits, s.GPUs)
			}
			if s.GPUs == 0 && len(c.Resources.Limits) > 0 {
				t.Errorf("limits %v with no gpus", c.Resources.Limits)
			}
			// The Spec rebuilt from the manifest is the Spec (Owned).
			back, err := specOf(j)
			if err != nil {
				t.Fatal(err)
			}
			s.Deadline, s.TTL = wantDL, wantTTL
			if back.JobID != s.JobID || back.AgentID != s.AgentID || back.BrokerID != s.BrokerID || back.Cluster != s.Cluster ||
				back.Tier != s.Tier || back.Namespace != s.Namespace || back.Queue != s.Queue || back.Image != s.Image ||
				back.GPUs != s.GPUs || back.Deadline != s.Deadline || back.TTL != s.TTL || len(back.Env) != len(s.Env) ||
				strings.Join(back.Command, " ") != strings.Join(s.Command, " ") {
				t.Errorf("rebuilt %+v\nwant      %+v", back, s)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string // in the error; "" is valid
	}{
		{"ok", func(*Spec) {}, ""},
		{"empty job id", func(s *Spec) { s.JobID = "" }, "job id"},
		{"upper-case job id", func(s *Spec) { s.JobID = "ABC" }, "job id"},
		{"job id too long for a name", func(s *Spec) { s.JobID = strings.Repeat("a", 60) }, "job id"},
		{"agent with a slash", func(s *Spec) { s.AgentID = "a/b" }, "agent"},
		{"agent too long", func(s *Spec) { s.AgentID = long }, "agent"},
		{"empty broker", func(s *Spec) { s.BrokerID = "" }, "broker"},
		{"cluster with a space", func(s *Spec) { s.Cluster = "b 200" }, "cluster"},
		{"empty namespace", func(s *Spec) { s.Namespace = "" }, "namespace"},
		{"namespace with a dot", func(s *Spec) { s.Namespace = "a.b" }, "namespace"},
		{"queue upper case", func(s *Spec) { s.Queue = "H200" }, "queue"},
		{"empty image", func(s *Spec) { s.Image = "" }, "image"},
		{"image with a newline", func(s *Spec) { s.Image = "a\nb" }, "image"},
		{"no command", func(s *Spec) { s.Command = nil }, "command"},
		{"empty program", func(s *Spec) { s.Command = []string{""} }, "program"},
		{"too many args", func(s *Spec) { s.Command = make([]string, api.MaxJobCommandArgs+1); s.Command[0] = "x" }, "command"},
		{"command too big", func(s *Spec) { s.Command = []string{"x", strings.Repeat("a", api.MaxJobCommandBytes)} }, "bytes"},
		{"env name", func(s *Spec) { s.Env = map[string]string{"A=B": "1"} }, "env name"},
		{"env value", func(s *Spec) { s.Env = map[string]string{"A": strings.Repeat("v", api.MaxJobEnvValueBytes+1)} }, "env A"},
		{"negative gpus", func(s *Spec) { s.GPUs = -1 }, "gpus"},
		{"too many gpus", func(s *Spec) { s.GPUs = api.MaxJobGPUs + 1 }, "gpus"},
		{"deadline too long", func(s *Spec) { s.Deadline = api.MaxJobDeadline + time.Second }, "deadline"},
		{"deadline under a second", func(s *Spec) { s.Deadline = time.Millisecond }, "deadline"},
		{"negative ttl", func(s *Spec) { s.TTL = -time.Second }, "ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			tc.edit(&s)
			err := Validate(s)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one about %q", err, tc.want)
			}
			var ae *api.Error
			if !asAPIError(err, &ae) || ae.Code != api.CodeInvalidRequest {
				t.Errorf("err %T %v is not an invalid_request", err, err)
			}
		})
	}
}
