package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
)

// mapFS is a file system for resolvePhysical's table test: "d" a
// directory, "f" a file, "->target" a symlink.
type mapFS map[string]string

type mapInfo struct {
	name string
	mode fs.FileMode
}

func (i mapInfo) Name() string       { return i.name }
func (i mapInfo) Size() int64        { return 0 }
func (i mapInfo) Mode() fs.FileMode  { return i.mode }
func (i mapInfo) ModTime() time.Time { return time.Time{} }
func (i mapInfo) IsDir() bool        { return i.mode.IsDir() }
func (i mapInfo) Sys() any           { return nil }

func (m mapFS) Lstat(name string) (fs.FileInfo, error) {
	v, ok := m[name]
	switch {
	case !ok:
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
	case v == "d":
		return mapInfo{filepath.Base(name), fs.ModeDir}, nil
	case strings.HasPrefix(v, "->"):
		return mapInfo{filepath.Base(name), fs.ModeSymlink}, nil
	}
	return mapInfo{filepath.Base(name), 0}, nil
}

func (m mapFS) Readlink(name string) (string, error) {
	v, ok := m[name]
	if !ok || !strings.HasPrefix(v, "->") {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return strings.TrimPrefix(v, "->"), nil
}

func TestResolvePhysical(t *testing.T) {
	fsys := mapFS{
		"/home": "d", "/home/me": "d", "/home/me/src": "d", "/home/me/src/app": "d",
		"/home/me/.scion": "d", "/home/me/.scion/broker": "d", "/home/me/.scion/broker/projects": "d",
		"/home/me/.scion/broker/projects/v": "d", "/home/me/.scion/broker/projects/v/base": "d",
		"/tmp": "d", "/tmp/L": "->/home/me/.scion/broker/projects",
		"/tmp/rel": "->../home/me/src", "/tmp/loop": "->/tmp/loop",
		"/tmp/toproc": "->/proc/self", "/tmp/file": "f",
		"/home/me/src/up": "->..", "/home/me/src/app2": "->app",
	}
	for _, tc := range []struct {
		in, want string
		err      error // nil, errThroughProc or any error (fs.ErrInvalid here)
	}{
		{in: "/home/me/src/app", want: "/home/me/src/app"},
		{in: "/home/me/src/app/", want: "/home/me/src/app"},
		{in: "/home//me/./src/app", want: "/home/me/src/app"},
		// ".." after a link is taken from where the link led, not from
		// the link's name: the lexical /tmp/projects/v/base is not it.
		{in: "/tmp/L/../projects/v/base", want: "/home/me/.scion/broker/projects/v/base"},
		{in: "/tmp/L/v/base", want: "/home/me/.scion/broker/projects/v/base"},
		{in: "/tmp/rel/app", want: "/home/me/src/app"},
		{in: "/home/me/src/up/src/app2", want: "/home/me/src/app"},
		{in: "/../../home/me", want: "/home/me"},
		// /proc is never walked, as written or through a link.
		{in: "/proc/self/cwd/../home/me/src/app", err: errThroughProc},
		{in: "/proc", err: errThroughProc},
		{in: "/tmp/toproc/cwd", err: errThroughProc},
		{in: "/tmp/../proc/self/root/home", err: errThroughProc},
		{in: "/tmp/missing", err: fs.ErrInvalid},
		{in: "/tmp/loop", err: fs.ErrInvalid},
		{in: "/tmp/file/x", err: fs.ErrInvalid},
		{in: "relative/path", err: fs.ErrInvalid},
	} {
		got, err := resolvePhysical(fsys, tc.in)
		switch {
		case tc.err == nil && (err != nil || got != tc.want):
			t.Errorf("resolvePhysical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err == errThroughProc && !errors.Is(err, errThroughProc):
			t.Errorf("resolvePhysical(%q) = %q, %v; want it refused as /proc", tc.in, got, err)
		case tc.err != nil && err == nil:
			t.Errorf("resolvePhysical(%q) = %q; want an error", tc.in, got)
		}
	}
}

func TestLocalRemoteVerdict(t *testing.T) {
	roots := []string{"/home/me", "/srv/git"}
	deny := []string{"/home/me/.scion/broker", "/home/me/.scion"}
	for _, tc := range []struct {
		path   string
		roots  []string
		want   error
		denied int
	}{
		{path: "/home/me/src/app", roots: roots},
		{path: "/home/me", roots: roots},
		{path: "/srv/git/a.git", roots: roots},
		{path: "/srv/gitx/a.git", roots: roots, want: errNotUnderDir},
		{path: "/home/meme/a", roots: roots, want: errNotUnderDir},
		{path: "/tmp/a", roots: roots, want: errNotUnderDir},
		{path: "/home/me/src/app", roots: nil, want: errNotUnderDir},
		// A denied directory wins over the root that holds it.
		{path: "/home/me/.scion/broker/projects/v/base", roots: roots, want: errDeniedDir, denied: 0},
		{path: "/home/me/.scion/broker", roots: roots, want: errDeniedDir, denied: 0},
		{path: "/home/me/.scion/hub.db", roots: roots, want: errDeniedDir, denied: 1},
		{path: "/home/me/.scionx", roots: roots},
		{path: "/proc/1/cwd", roots: []string{"/"}, want: errThroughProc},
		{path: "/anything", roots: []string{"/"}},
	} {
		i, err := localRemoteVerdict(tc.path, tc.roots, deny)
		if !errors.Is(err, tc.want) || err == nil && tc.want != nil {
			t.Errorf("verdict(%q, roots %v) = %v, want %v", tc.path, tc.roots, err, tc.want)
		}
		if tc.want == errDeniedDir && i != tc.denied {
			t.Errorf("verdict(%q): denied %d, want %d", tc.path, i, tc.denied)
		}
	}
}

// A repository under an allowed root whose git files lead elsewhere (its
// .git a gitdir file, its objects a symlink, an alternate) into the data
// directory is refused like a path into it; a plain one is accepted.
func TestLocalRemoteRepositoryFilesJudged(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	victim := agentSpec(api.SharingWorktreePerAgent, repo.URL, "v1")
	victim.ProjectID = "victim"
	mustPrepare(t, w, victim)
	victimGit := filepath.Join(w.layout.BaseDir("victim"), ".git")

	root := t.TempDir()
	gitfile := filepath.Join(root, "gitfile")
	gitrepo.WriteFile(t, filepath.Join(gitfile, ".git"), "gitdir: "+victimGit+"\n")
	objlink := filepath.Join(root, "objlink.git")
	gitrepo.Git(t, root, "init", "-q", "--bare", objlink)
	if err := os.RemoveAll(filepath.Join(objlink, "objects")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(victimGit, "objects"), filepath.Join(objlink, "objects")); err != nil {
		t.Fatal(err)
	}
	alt := filepath.Join(root, "alt.git")
	gitrepo.Git(t, root, "clone", "-q", "--bare", repo.Bare, alt)
	gitrepo.WriteFile(t, filepath.Join(alt, "objects", "info", "alternates"), filepath.Join(victimGit, "objects")+"\n")

	for _, remote := range []string{gitfile, objlink, alt, "file://" + alt} {
		s := agentSpec(api.SharingClonePerAgent, remote, "thief")
		s.ProjectID = "thief"
		_, err := w.Prepare(t.Context(), s)
		wantCode(t, err, api.CodeInvalidRequest)
		if err != nil && !strings.Contains(err.Error(), "inside the runtime broker's data directory") {
			t.Errorf("%s: %v", remote, err)
		}
	}
	ok := agentSpec(api.SharingClonePerAgent, repo.Bare, "ok")
	ok.ProjectID = "thief"
	wantFiles(t, mustPrepare(t, w, ok), "README.md")
}

// Outside every root, inside the Scion home, a missing repository: each
// refused with its reason; a root given through a symlink still allows
// what is under it.
func TestLocalRemoteRoots(t *testing.T) {
	repo := gitrepo.New(t)
	scionHome := t.TempDir()
	inHome := filepath.Join(scionHome, "repo.git")
	gitrepo.Git(t, scionHome, "clone", "-q", "--bare", repo.Bare, inHome)
	linkRoot := filepath.Join(t.TempDir(), "roots")
	if err := os.Symlink(filepath.Dir(repo.Bare), linkRoot); err != nil {
		t.Fatal(err)
	}
	w := newTestWorkspaces(t, GitConfig{})
	cfg := w.cfg
	cfg.LocalRemoteRoots = []string{linkRoot, scionHome}
	cfg.LocalRemoteDeny = []string{scionHome}
	w, err := NewGit(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "other.git")
	gitrepo.Git(t, "/", "clone", "-q", "--bare", repo.Bare, elsewhere)
	for _, tc := range []struct{ remote, code, says string }{
		{elsewhere, api.CodeInvalidRequest, "not under a directory this broker allows"},
		{"file://" + elsewhere, api.CodeInvalidRequest, "not under a directory this broker allows"},
		{inHome, api.CodeInvalidRequest, "inside the Scion home"},
		{"/proc/self/root" + repo.Bare, api.CodeInvalidRequest, "/proc"},
		{filepath.Join(linkRoot, "missing.git"), api.CodeRuntimeError, "does not appear to be a git repository the runtime broker can read"},
	} {
		s := agentSpec(api.SharingClonePerAgent, tc.remote, "a1")
		_, err := w.Prepare(t.Context(), s)
		wantCode(t, err, tc.code)
		if err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want it to say %q", tc.remote, err, tc.says)
		}
	}
	// Under the root as linked, and "repo" for "repo.git" as git does.
	for i, remote := range []string{filepath.Join(linkRoot, "remote.git"), filepath.Join(linkRoot, "remote")} {
		s := agentSpec(api.SharingClonePerAgent, remote, "ok"+string(rune('a'+i)))
		wantFiles(t, mustPrepare(t, w, s), "README.md")
	}
}

// git runs in an empty directory of the broker's, not in the broker's
// working directory.
func TestGitRunsInEmptyDirectory(t *testing.T) {
	gitrepo.New(t) // skips without git
	w := newTestWorkspaces(t, GitConfig{})
	out, err := w.git.run(t.Context(), "", "rev-parse", "--show-prefix")
	if err == nil {
		t.Errorf("git found a repository around its working directory: %q", out)
	}
	cwd, _ := os.Getwd()
	if w.git.dir == "" || w.git.dir == cwd {
		t.Fatalf("git's directory = %q (the broker's is %q)", w.git.dir, cwd)
	}
	if entries, err := os.ReadDir(w.git.dir); err != nil || len(entries) != 0 {
		t.Errorf("git's directory %s: %v, %v; want it empty", w.git.dir, entries, err)
	}
}

// A source that changed between the check and the end of the clone (the
// checked directory renamed away and another put in its place) fails the
// clone, and nothing of it is kept.
func TestLocalSourceCheckedAfterClone(t *testing.T) {
	repo := gitrepo.New(t)
	w := newTestWorkspaces(t, GitConfig{})
	src, err := w.local.check(osFS{}, repo.Bare)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.verify(gitSource{url: src.path, local: src}); err != nil {
		t.Fatalf("an unchanged source: %v", err)
	}
	moved := repo.Bare + ".moved"
	if err := os.Rename(repo.Bare, moved); err != nil {
		t.Fatal(err)
	}
	gitrepo.Git(t, "/", "clone", "-q", "--bare", moved, repo.Bare)
	dest := filepath.Join(t.TempDir(), "clone")
	err = w.cloneInto(t.Context(), gitSource{url: src.path, local: src}, filepath.Dir(dest), dest, "clone", "--quiet")
	wantCode(t, err, api.CodeInvalidRequest)
	if exists(dest) {
		t.Error("the clone of a changed source was kept")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".clone.tmp-*")); len(left) != 0 {
		t.Errorf("temporary clone left: %v", left)
	}
}
