package api

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Git remote transports, as GitRemoteTransport classifies them.
const (
	GitTransportHTTPS = "https" // https://host/path
	GitTransportSSH   = "ssh"   // ssh://[user@]host[:port]/path or scp-like [user@]host:path
	// GitTransportLocal is a path on the broker's host: /abs/path or
	// file:///abs/path. Anyone who may set a project's remote could read
	// any repository the broker's user can (another project's base clone),
	// so a broker allows it only when its operator says so
	// (server.broker.allow_local_git_remotes).
	GitTransportLocal = "local"
)

// scpLike is git's scp-like syntax: [user@]host:path, where the host has
// no slash (else git reads a local path) and the path is not empty.
var scpLike = regexp.MustCompile(`^(?:[A-Za-z0-9._~-]+@)?([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):[^:]`)

// remoteHelper is git's "<transport>::<address>" form, which runs the
// git-remote-<transport> program.
var remoteHelper = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`)

// GitRemoteTransport classifies a project's git remote and refuses every
// form that is not one of the transports above: plain http and git://
// (unauthenticated, readable on the way), ext:: and fd:: and other
// "<helper>::" forms (they run commands), relative paths (resolved
// against the broker's working directory), a leading dash (read as an
// option by git), and URLs without a host or path. It only looks at the
// text; whether a broker allows local remotes is the broker's decision.
// Check the text with CheckGitRemoteText first.
func GitRemoteTransport(remote string) (string, error) {
	bad := func(why string) (string, error) {
		return "", BadRequest("gitRemote %s is not an allowed git remote: %s; use https://host/path, ssh://host/path or git@host:path", Quote(remote), why)
	}
	switch {
	case remote == "":
		return bad("it is empty")
	case strings.HasPrefix(remote, "-"):
		return bad("it starts with a dash")
	case remoteHelper.MatchString(remote):
		return bad("remote helpers (<transport>::address) are not allowed")
	}
	if scheme, _, ok := strings.Cut(remote, "://"); ok {
		u, err := url.Parse(remote)
		if err != nil {
			return bad("it is not a valid URL")
		}
		switch strings.ToLower(scheme) {
		case "https", "ssh":
			if u.Host == "" || u.Hostname() == "" {
				return bad("it has no host")
			}
			if strings.HasPrefix(u.Host, "-") || strings.HasPrefix(u.User.Username(), "-") {
				// ssh reads "-oProxyCommand=...@host" as an option, on a
				// git too old to block it.
				return bad("its user or host starts with a dash")
			}
			if strings.Trim(u.Path, "/") == "" {
				return bad("it names no repository")
			}
			if strings.ToLower(scheme) == "https" {
				return GitTransportHTTPS, nil
			}
			return GitTransportSSH, nil
		case "file":
			if u.Host != "" && u.Host != "localhost" {
				return bad("a file:// URL names a path on this host")
			}
			if !path.IsAbs(u.Path) || path.Clean(u.Path) == "/" {
				return bad("it names no repository")
			}
			if why := badLocalPath(u.Path); why != "" {
				return bad(why)
			}
			return GitTransportLocal, nil
		default:
			return bad("transport " + Quote(scheme) + " is not allowed")
		}
	}
	if strings.HasPrefix(remote, "/") {
		if path.Clean(remote) == "/" {
			return bad("it names no repository")
		}
		if why := badLocalPath(remote); why != "" {
			return bad(why)
		}
		return GitTransportLocal, nil
	}
	if m := scpLike.FindStringSubmatch(remote); m != nil {
		// git reads "c:path" with a one-letter host as a local path on
		// Windows; nobody names a host with one letter.
		if len(m[1]) > 1 {
			return GitTransportSSH, nil
		}
	}
	return bad("it is a relative path or an unknown form")
}

// badLocalPath says why a local remote's path is refused whatever the
// broker allows: a "." or ".." element (no repository needs one, and
// after a symlink it leads elsewhere than it reads), or /proc (whose links
// show the broker's own working directory and root). Brokers resolve the
// path themselves too; this refuses it when it is set.
func badLocalPath(p string) string {
	for _, e := range strings.Split(p, "/") {
		if e == "." || e == ".." {
			return "a path on the broker's host must not have . or .. elements"
		}
	}
	if c := path.Clean(p); c == "/proc" || strings.HasPrefix(c, "/proc/") {
		return "a path under /proc is never a repository"
	}
	return ""
}

// CheckGitRemote is the Hub's check of a project's git remote (create and
// update): the text rules, then an allowed transport. An empty remote
// (none) is fine. A local path passes here, since a broker may allow
// it; brokers that do not refuse agents of the project with the reason.
func CheckGitRemote(remote string) error {
	if err := CheckGitRemoteText(remote); err != nil || remote == "" {
		return err
	}
	_, err := GitRemoteTransport(remote)
	return err
}
