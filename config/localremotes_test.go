package config

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// allow_local_git_remotes: the earlier boolean still reads (true is the
// user's home, no longer every path), a list names the roots, and the
// workstation's default is the home.
func TestLocalGitRemoteRoots(t *testing.T) {
	home := "/home/me"
	for _, tc := range []struct {
		yaml        string
		workstation bool
		want        []string
		err         string
	}{
		{yaml: ``, want: nil},
		{yaml: ``, workstation: true, want: []string{home}},
		{yaml: `allow_local_git_remotes: false`, workstation: true, want: nil},
		{yaml: `allow_local_git_remotes: false`, want: nil},
		{yaml: `allow_local_git_remotes: true`, want: []string{home}},
		{yaml: `allow_local_git_remotes: true`, workstation: true, want: []string{home}},
		{yaml: `allow_local_git_remotes: [/srv/git, "~/src", /home/me/x/../y]`, want: []string{"/srv/git", "/home/me/src", "/home/me/y"}},
		{yaml: `allow_local_git_remotes: []`, workstation: true, want: nil},
		{yaml: `allow_local_git_remotes: [src]`, err: "not an absolute directory"},
		{yaml: `allow_local_git_remotes: yes please`, err: "neither true, false nor a list"},
		{yaml: `allow_local_git_remotes: {a: b}`, err: "want true, false or a list"},
	} {
		var b BrokerSettings
		err := yaml.Unmarshal([]byte(tc.yaml), &b)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if got := localGitRemoteRoots(b.AllowLocalGitRemotes, tc.workstation, home); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q (workstation %v): roots %v, want %v", tc.yaml, tc.workstation, got, tc.want)
		}
		// Saved as read.
		out, err := yaml.Marshal(&b)
		if err != nil {
			t.Fatal(err)
		}
		var again BrokerSettings
		if err := yaml.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again.AllowLocalGitRemotes, b.AllowLocalGitRemotes) {
			t.Errorf("%q: saved as %q, read back %+v (%v)", tc.yaml, out, again.AllowLocalGitRemotes, err)
		}
	}
}
