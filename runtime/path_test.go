package runtime

import "testing"

func TestPathWith(t *testing.T) {
	for _, tc := range []struct{ path, dir, want string }{
		{"/usr/bin:/bin", "/usr/local/bin", "/usr/bin:/bin:/usr/local/bin"},
		{"/usr/local/bin:/usr/bin", "/usr/local/bin", "/usr/local/bin:/usr/bin"},
		{"/usr/local/bin/:/usr/bin", "/usr/local/bin", "/usr/local/bin/:/usr/bin"},
		{"", "/usr/local/bin", "/usr/local/bin"},
		{"/opt/x/bin", "", "/opt/x/bin"},
		{"/usr/local/binx", "/usr/local/bin", "/usr/local/binx:/usr/local/bin"},
	} {
		if got := PathWith(tc.path, tc.dir); got != tc.want {
			t.Errorf("PathWith(%q, %q) = %q, want %q", tc.path, tc.dir, got, tc.want)
		}
	}
}
