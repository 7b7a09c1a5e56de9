package kubernetes

import (
	"reflect"
	"strings"
	"testing"
)

func bp(b bool) *bool { return &b }

func TestResolveAgentWinsOverProfile(t *testing.T) {
	global := Settings{Namespace: "scion", WorkspaceSize: "10Gi", SafeToEvict: bp(true), ServiceAccount: "sandbox"}
	profile := Settings{Context: "batch", Namespace: "agents", SharedDirSize: "40Gi", SafeToEvict: bp(false), GKE: bp(true)}
	agent := Settings{Namespace: "mine", GKE: bp(false), PriorityClass: "high"}
	tests := []struct {
		name   string
		layers []Settings
		want   Settings
	}{
		{"nothing set", nil, Settings{}},
		{"global only", []Settings{{}, {}, global}, global},
		{"profile over global", []Settings{{}, profile, global}, Settings{Context: "batch", Namespace: "agents",
			WorkspaceSize: "10Gi", SharedDirSize: "40Gi", SafeToEvict: bp(false), GKE: bp(true), ServiceAccount: "sandbox"}},
		// An agent's explicit false beats its profile's true: a set
		// boolean is a setting, not an absence.
		{"agent over profile over global", []Settings{agent, profile, global}, Settings{Context: "batch", Namespace: "mine",
			WorkspaceSize: "10Gi", SharedDirSize: "40Gi", SafeToEvict: bp(false), GKE: bp(false), PriorityClass: "high", ServiceAccount: "sandbox"}},
		{"agent alone", []Settings{agent}, agent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(tc.layers...); !reflect.DeepEqual(got.Map(), tc.want.Map()) {
				t.Fatalf("Resolve = %v, want %v", got.Map(), tc.want.Map())
			}
		})
	}
	// Resolve copies booleans: changing the result leaves the layers be.
	got := Resolve(profile)
	*got.GKE = false
	if !*profile.GKE {
		t.Fatal("Resolve aliased a layer's boolean")
	}
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		in      map[string]string
		want    map[string]string
		wantErr string
	}{
		{in: map[string]string{"context": "batch-cluster", "namespace": "agents", "shared_dir_size": "40Gi",
			"safe_to_evict": "false", "memory": "2g"},
			want: map[string]string{"context": "batch-cluster", "namespace": "agents", "shared_dir_size": "40Gi", "safe_to_evict": "false"}},
		{in: map[string]string{"gke_mode": "yes"}, wantErr: "gke_mode"},
		{in: map[string]string{"shared_dir_size": "forty"}, wantErr: "shared_dir_size"},
		{in: map[string]string{"home_storage": "s3"}, wantErr: "home_storage"},
		{in: map[string]string{"shared_dir_storage": "nfs", "home_storage": "pvc", "priority_class": " high "},
			want: map[string]string{"shared_dir_storage": "nfs", "home_storage": "pvc", "priority_class": "high"}},
	}
	for _, tc := range tests {
		got, err := ParseSettings(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSettings(%v) error = %v, want one naming %s", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got.Map(), tc.want) {
			t.Errorf("ParseSettings(%v) = %v, %v; want %v", tc.in, got.Map(), err, tc.want)
		}
	}
}

func TestAgentSettingsFromLabels(t *testing.T) {
	s, err := agentSettings(map[string]string{"scion.k8s.namespace": "mine", "scion.k8s.safe_to_evict": "true", "scion.memory": "1g"})
	if err != nil || s.Namespace != "mine" || !isTrue(s.SafeToEvict) || s.Context != "" {
		t.Fatalf("agentSettings = %+v, %v", s, err)
	}
}
