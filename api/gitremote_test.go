package api

import "testing"

func TestGitRemoteTransport(t *testing.T) {
	for _, tc := range []struct {
		remote, want string // want "" means refused
	}{
		{"https://github.com/team/repo.git", GitTransportHTTPS},
		{"HTTPS://github.com/team/repo", GitTransportHTTPS},
		{"https://user:tok@git.example.com:8443/a/b.git", GitTransportHTTPS},
		{"ssh://git@github.com/team/repo.git", GitTransportSSH},
		{"ssh://git@github.com:2222/team/repo.git", GitTransportSSH},
		{"git@github.com:team/repo.git", GitTransportSSH},
		{"github.com:team/repo.git", GitTransportSSH},
		{"deploy@[::1]:repo.git", GitTransportSSH},
		{"/srv/git/repo.git", GitTransportLocal},
		{"file:///srv/git/repo.git", GitTransportLocal},
		{"file://localhost/srv/git/repo.git", GitTransportLocal},

		{"", ""},
		{"http://github.com/team/repo.git", ""},
		{"git://github.com/team/repo.git", ""},
		{"ext::sh -c touch% /tmp/pwned", ""},
		{"fd::3", ""},
		{"transport::https://github.com/x", ""},
		{"ftp://h/r.git", ""},
		{"-uhttps://x/y", ""},
		{"--upload-pack=touch /tmp/x", ""},
		{"https:///repo.git", ""},
		{"https://github.com", ""},
		{"https://github.com/", ""},
		{"file://otherhost/srv/repo", ""},
		{"file:///", ""},
		{"/", ""},
		{"/tmp/L/../projects/p1/base", ""},
		{"file:///tmp/L/../projects/p1/base", ""},
		{"/srv/./git/repo.git", ""},
		{"/proc/self/cwd/../home/me/.scion/broker/projects/p1/base", ""},
		{"file:///proc/self/root/srv/git/repo.git", ""},
		{"/procfs/repo.git", GitTransportLocal},
		{"/srv/git/..repo.git", GitTransportLocal},
		{"../other/repo", ""},
		{"repo.git", ""},
		{"./repo", ""},
		{"c:repo", ""},
		{"git@host:", ""},
		{"git@ho/st:repo", ""},
		// A user or host that starts with a dash is an ssh option
		// (-oProxyCommand=...) to a git that does not block it.
		{"ssh://-oProxyCommand=x@host/repo", ""},
		{"ssh://-host/repo", ""},
		{"https://-host/repo", ""},
	} {
		got, err := GitRemoteTransport(tc.remote)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("GitRemoteTransport(%q) = %q, %v; want %q", tc.remote, got, err, tc.want)
		}
		if err != nil && !IsCode(err, CodeInvalidRequest) {
			t.Errorf("GitRemoteTransport(%q): error %v is not invalid_request", tc.remote, err)
		}
	}
}

func TestCheckGitRemote(t *testing.T) {
	for _, tc := range []struct {
		remote string
		ok     bool
	}{
		{"", true},
		{"git@github.com:team/repo.git", true},
		{"/srv/git/repo.git", true}, // the broker decides
		{"https://h/r.git\r\n[core]", false},
		{"ext::sh", false},
		{"http://h/r.git", false},
	} {
		if err := CheckGitRemote(tc.remote); (err == nil) != tc.ok {
			t.Errorf("CheckGitRemote(%q) = %v, want ok %v", tc.remote, err, tc.ok)
		}
	}
}
