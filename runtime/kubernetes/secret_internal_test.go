package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSecretsOutOfPodAndRecord: the spec's secret entries are
// secretKeyRefs into a Secret named like the pod, in the pod and in the
// record alike; the other entries stay literal; a name a Secret key cannot
// be is refused; a spec with no secrets has no Secret.
func TestSecretsOutOfPodAndRecord(t *testing.T) {
	for _, tc := range []struct {
		name      string
		secretEnv []string
		env       map[string]string
		refs      []string // want secretKeyRefs for these
		literal   []string
		wantErr   string
	}{
		{name: "none", env: map[string]string{"A": "1"}, literal: []string{"A"}},
		{name: "secret and token", secretEnv: []string{"API_KEY", "SCION_AGENT_TOKEN", "MISSING", "HOME"},
			env:  map[string]string{"A": "1", "API_KEY": "s3cret", "SCION_AGENT_TOKEN": "sca_tok"},
			refs: []string{"API_KEY", "SCION_AGENT_TOKEN"}, literal: []string{"A"}},
		{name: "bad key", secretEnv: []string{"NO/KEY"}, env: map[string]string{"NO/KEY": "x"}, wantErr: "cannot be a Secret key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec()
			spec.Env, spec.SecretEnv = tc.env, tc.secretEnv
			sec, err := agentSecret(spec, "pod-1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("agentSecret: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (sec == nil) != (len(tc.refs) == 0) {
				t.Fatalf("Secret = %+v, want one iff there are secrets", sec)
			}
			pod, _, err := buildPod(podInput{spec: spec, settings: Settings{}, name: "pod-1"})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := newRecord(pod)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]int{}
			for i, e := range pod.Spec.Containers[0].Env {
				env[e.Name] = i
			}
			for _, k := range tc.refs {
				e := pod.Spec.Containers[0].Env[env[k]]
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "pod-1" || e.ValueFrom.SecretKeyRef.Key != k {
					t.Errorf("%s = %+v, want a secretKeyRef to pod-1/%s", k, e, k)
				}
				if string(sec.Data[k]) != spec.Env[k] {
					t.Errorf("Secret[%s] = %q", k, sec.Data[k])
				}
				b, _ := json.Marshal(pod)
				if strings.Contains(string(b), spec.Env[k]) || strings.Contains(rec.Data[recordPod], spec.Env[k]) {
					t.Errorf("the value of %s is in the pod or its record", k)
				}
			}
			for _, k := range tc.literal {
				if e := pod.Spec.Containers[0].Env[env[k]]; e.Value != spec.Env[k] || e.ValueFrom != nil {
					t.Errorf("%s = %+v, want literal", k, e)
				}
			}
			if sec != nil && len(sec.Data) != len(tc.refs) {
				t.Errorf("Secret keys = %d, want %d", len(sec.Data), len(tc.refs))
			}
		})
	}
}
