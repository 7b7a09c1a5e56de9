package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A project's remote may be a path on the broker's host only under the
// roots its operator names (server.broker.allow_local_git_remotes), and
// never inside the broker's data directory or the Scion home, even when a
// root contains them: the data directory holds every project's base clone
// and checkouts, which a member who may set a project's remote must not
// read. A deny-list alone leaks (a symlink followed by "..", the broker's
// working directory seen through /proc, a rename between the check and
// the clone), so the rule is an allow-list, decided on the path as the
// kernel would walk it:
//
//   - resolvePhysical walks the path one element at a time with Lstat and
//     Readlink (never the kernel's own following, so /proc's magic links
//     are plain text), treats ".." after the part already resolved, and
//     refuses any step through /proc;
//   - localRemoteVerdict (pure) decides on the resolved path;
//   - inspectLocalRepo applies both to every directory git reads from the
//     source (its git directory, common directory, objects and their
//     alternates) and records their identities;
//   - git is handed the resolved path with --no-local (objects come through
//     the pack protocol, never hard-linked or copied as files), in a fixed
//     empty working directory, and the source is inspected again once git
//     is done: a clone whose source changed in between is removed, a
//     fetch fails its create (what it fetched stays in the base clone).

// physFS is what resolvePhysical needs of a file system; osFS is the real
// one, a map stands in for it in table tests.
type physFS interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

type osFS struct{}

func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }
func (osFS) Readlink(name string) (string, error)   { return os.Readlink(name) }

// maxLinks bounds the symlinks followed in one resolution, as the kernel's
// 40 (ELOOP).
const maxLinks = 40

// errThroughProc is a path that goes through /proc (its magic links name
// another process's view: the broker's working directory, its root).
var errThroughProc = errors.New("the path goes through /proc")

// underDir reports whether p is dir or inside it; both are clean and
// absolute.
func underDir(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// resolvePhysical returns the absolute path p leads to, every symlink
// resolved and every ".." taken from the directory actually reached, one
// element at a time. Every element must exist; a step into /proc, as
// written or through a link, is errThroughProc.
func resolvePhysical(fsys physFS, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	rest := strings.Split(p, "/")
	cur, links := "/", 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur is resolved: its parent is physical
			continue
		}
		next := filepath.Join(cur, c)
		if underDir(next, "/proc") {
			return "", errThroughProc
		}
		fi, err := fsys.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return "", fmt.Errorf("too many symlinks in %q", p)
			}
			target, err := fsys.Readlink(next)
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if !fi.IsDir() && slices.ContainsFunc(rest, func(c string) bool { return c != "" }) {
			return "", fmt.Errorf("%s is not a directory", next)
		}
		cur = next
	}
	return cur, nil
}

// Why localRemoteVerdict refuses a resolved path.
var (
	errDeniedDir   = errors.New("inside a directory that is never a remote")
	errNotUnderDir = errors.New("not under an allowed root")
)

// localRemoteVerdict decides on a resolved local remote: it must not be
// (in) /proc or a denied directory, and must be (in) one of the roots.
// roots and deny are clean absolute paths, resolved themselves (and deny
// also as written); a deny wins over a root that contains it. The index of
// the denied directory is returned with errDeniedDir.
func localRemoteVerdict(resolved string, roots, deny []string) (int, error) {
	if underDir(resolved, "/proc") {
		return -1, errThroughProc
	}
	for i, d := range deny {
		if d != "" && underDir(resolved, d) {
			return i, errDeniedDir
		}
	}
	for _, r := range roots {
		if r != "" && underDir(resolved, r) {
			return -1, nil
		}
	}
	return -1, errNotUnderDir
}

// fileID is where a directory of the source was, and what it was.
type fileID struct {
	path     string
	dev, ino uint64
}

// localSource is a checked local remote: the resolved path git is given
// and the identities of every directory git reads from.
type localSource struct {
	path string
	ids  []fileID
}

// localPolicy is the broker's local-remote rule: the roots as configured
// and the denied directories (the data directory first), both resolved
// again at each check, so that a root renamed or linked since the start
// is judged as it is now.
type localPolicy struct {
	roots []string
	deny  []string
}

func (p localPolicy) allowed() bool { return len(p.roots) > 0 }

// resolvedLists resolves the roots and the denied directories. A root
// that does not resolve allows nothing; a denied directory that does not
// resolve is kept as written.
func (p localPolicy) resolvedLists(fsys physFS) (roots, deny, denyNames []string) {
	for _, r := range p.roots {
		if rr, err := resolvePhysical(fsys, filepath.Clean(r)); err == nil {
			roots = append(roots, rr)
		}
	}
	for _, d := range p.deny {
		d = filepath.Clean(d)
		deny, denyNames = append(deny, d), append(denyNames, d)
		if rd, err := resolvePhysical(fsys, d); err == nil && rd != d {
			deny, denyNames = append(deny, rd), append(denyNames, d)
		}
	}
	return roots, deny, denyNames
}

// localRefusal is a local remote the policy refuses: why, and for a
// denied directory which one (as configured).
type localRefusal struct {
	err    error
	denied string
}

func (r *localRefusal) Error() string {
	if r.denied != "" {
		return fmt.Sprintf("%v (%s)", r.err, r.denied)
	}
	return r.err.Error()
}

func (r *localRefusal) Unwrap() error { return r.err }

// check resolves p and judges it, and every directory git would read from
// the repository there. It returns the source to hand git.
func (p localPolicy) check(fsys physFS, path string) (*localSource, error) {
	roots, deny, denyNames := p.resolvedLists(fsys)
	judge := func(q string) (string, error) {
		r, err := resolvePhysical(fsys, q)
		if err != nil {
			if errors.Is(err, errThroughProc) {
				return "", &localRefusal{err: err}
			}
			return "", err
		}
		if i, err := localRemoteVerdict(r, roots, deny); err != nil {
			ref := &localRefusal{err: err}
			if i >= 0 {
				ref.denied = denyNames[i]
			}
			return "", ref
		}
		return r, nil
	}
	resolved, err := judge(path)
	if err != nil && !isRefusal(err) && errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(path, ".git") {
		// git also finds repo.git when told repo.
		if r, err2 := judge(filepath.Clean(path) + ".git"); err2 == nil || isRefusal(err2) {
			resolved, err = r, err2
		}
	}
	if err != nil {
		return nil, err
	}
	src := &localSource{path: resolved}
	if err := inspectLocalRepo(fsys, resolved, judge, src); err != nil {
		return nil, err
	}
	return src, nil
}

func isRefusal(err error) bool {
	var r *localRefusal
	return errors.As(err, &r)
}

// maxAlternateDepth is git's own limit on chained alternates.
const maxAlternateDepth = 5

// inspectLocalRepo judges every directory git reads from the repository
// at dir (resolved): the git directory (dir/.git, a "gitdir:" file's
// target, or dir itself when bare), its common directory (a worktree's
// "commondir"), the objects directory and, recursively, its alternates;
// and records what each is.
func inspectLocalRepo(fsys physFS, dir string, judge func(string) (string, error), src *localSource) error {
	add := func(p string) error {
		id, err := statID(p)
		if err != nil {
			return err
		}
		src.ids = append(src.ids, id)
		return nil
	}
	if err := add(dir); err != nil {
		return err
	}
	gitDir := dir
	if fi, err := fsys.Lstat(filepath.Join(dir, ".git")); err == nil {
		link := filepath.Join(dir, ".git")
		if !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
			target, err := readPointer(link, "gitdir:")
			if err != nil {
				return err
			}
			link = relTo(dir, target)
		}
		if gitDir, err = judge(link); err != nil {
			return err
		}
	}
	if err := add(gitDir); err != nil {
		return err
	}
	common := gitDir
	if target, err := readPointer(filepath.Join(gitDir, "commondir"), ""); err == nil {
		if common, err = judge(relTo(gitDir, target)); err != nil {
			return err
		}
		if err := add(common); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	objects, err := judge(filepath.Join(common, "objects"))
	if err != nil {
		return err
	}
	return addObjects(objects, judge, add, 0)
}

// addObjects records an objects directory and judges its alternates.
func addObjects(objects string, judge func(string) (string, error), add func(string) error, depth int) error {
	if err := add(objects); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(objects, "info", "alternates"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if depth >= maxAlternateDepth || strings.HasPrefix(line, `"`) {
			return fmt.Errorf("its alternates (%s) are nested too deep or quoted", filepath.Join(objects, "info", "alternates"))
		}
		alt, err := judge(relTo(objects, line))
		if err != nil {
			return err
		}
		if err := addObjects(alt, judge, add, depth+1); err != nil {
			return err
		}
	}
	return sc.Err()
}

// readPointer reads a small file naming a path (a gitfile's "gitdir: X",
// a worktree's commondir), without its prefix.
func readPointer(path, prefix string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 4097)
	n, _ := f.Read(buf)
	if n > 4096 {
		return "", fmt.Errorf("%s is too long", path)
	}
	s := strings.TrimSpace(string(buf[:n]))
	if prefix != "" {
		var ok bool
		if s, ok = strings.CutPrefix(s, prefix); !ok {
			return "", fmt.Errorf("%s is neither a directory nor a gitdir file", path)
		}
		s = strings.TrimSpace(s)
	}
	if s == "" {
		return "", fmt.Errorf("%s names no path", path)
	}
	return s, nil
}

// relTo is target, read relative to dir when it is not absolute.
func relTo(dir, target string) string {
	if filepath.IsAbs(target) {
		return target
	}
	return dir + "/" + target
}

// statID is what path is now (not following a last symlink: every path
// given is resolved).
func statID(path string) (fileID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, fmt.Errorf("%s: no device and inode", path)
	}
	if !fi.IsDir() {
		return fileID{}, fmt.Errorf("%s is not a directory", path)
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(path, &sfs); err == nil && sfs.Type == procSuperMagic {
		// A procfs mounted somewhere else than /proc.
		return fileID{}, &localRefusal{err: errThroughProc}
	}
	return fileID{path: path, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// procSuperMagic is procfs's f_type (linux/magic.h).
const procSuperMagic = 0x9fa0

// same reports whether the source is still what it was when checked: the
// same directories at the same resolved paths.
func (s *localSource) same(now *localSource) bool {
	if now == nil || now.path != s.path || len(now.ids) != len(s.ids) {
		return false
	}
	for i := range s.ids {
		if s.ids[i] != now.ids[i] {
			return false
		}
	}
	return true
}
