package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// LocalGitRemotes is server.broker.allow_local_git_remotes: where a path on
// the broker's host (or a file:// URL) may be a project's git remote. It is
// an allow-list of root directories, because whoever may set a project's
// remote could otherwise read any repository the broker's user can:
//
//   - absent: none on a team broker; the user's home on a workstation;
//   - false: none, on either;
//   - true: the user's home (the form of earlier versions, which allowed
//     every path);
//   - a list of absolute directories ("~/" is the user's home): those.
//
// The Scion home and the broker's data directory are never a remote, even
// inside a root (the broker refuses them).
type LocalGitRemotes struct {
	// Home is true (or false) as written: the user's home, or none.
	Home bool
	// List is the roots as written, when a list was.
	List []string
}

// UnmarshalYAML reads a boolean or a list of absolute directories.
func (l *LocalGitRemotes) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("server.broker.allow_local_git_remotes: %q is neither true, false nor a list of directories", n.Value)
		}
		*l = LocalGitRemotes{Home: b}
		return nil
	case yaml.SequenceNode:
		var roots []string
		if err := n.Decode(&roots); err != nil {
			return fmt.Errorf("server.broker.allow_local_git_remotes: the list must hold directories: %w", err)
		}
		for _, r := range roots {
			if !filepath.IsAbs(r) && r != "~" && !strings.HasPrefix(r, "~/") {
				return fmt.Errorf("server.broker.allow_local_git_remotes: %q is not an absolute directory (nor ~/...)", r)
			}
		}
		*l = LocalGitRemotes{List: roots}
		return nil
	}
	return fmt.Errorf("server.broker.allow_local_git_remotes: want true, false or a list of directories")
}

// MarshalYAML writes what was read: the list, or the boolean.
func (l LocalGitRemotes) MarshalYAML() (any, error) {
	if l.List != nil {
		return l.List, nil
	}
	return l.Home, nil
}

// LocalGitRemoteRoots is the setting's roots for a broker: workstation
// says whether an absent setting means the user's home. Without a home
// (none can be found), true and "~/" allow nothing.
func LocalGitRemoteRoots(l *LocalGitRemotes, workstation bool) []string {
	home, _ := os.UserHomeDir()
	return localGitRemoteRoots(l, workstation, home)
}

func localGitRemoteRoots(l *LocalGitRemotes, workstation bool, home string) []string {
	var roots []string
	add := func(r string) {
		if r == "~" || strings.HasPrefix(r, "~/") {
			if home == "" {
				return
			}
			r = filepath.Join(home, strings.TrimPrefix(r, "~"))
		}
		if filepath.IsAbs(r) {
			roots = append(roots, filepath.Clean(r))
		}
	}
	switch {
	case l == nil && workstation, l != nil && l.List == nil && l.Home:
		add("~")
	case l != nil:
		for _, r := range l.List {
			add(r)
		}
	}
	return roots
}
