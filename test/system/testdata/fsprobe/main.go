// Command fsprobe is what the Docker system tests run inside an agent's
// container through `scion exec` to look at its filesystem: the demo image
// is FROM scratch and has no shell, no ls and no git. The tests build it
// static (CGO_ENABLED=0) and copy it into the agent's broker-local home,
// which the container sees at /home/agent.
//
//	fsprobe ls DIR          the names in DIR, sorted, one per line ("/" after directories)
//	fsprobe cat FILE        FILE's content
//	fsprobe write FILE TEXT create FILE with TEXT, owned like its directory
//	fsprobe head DIR        the HEAD of the git checkout at DIR, following a
//	                        worktree's ".git" file to its git directory
//	fsprobe exit CODE TEXT  print TEXT on stdout and stderr, exit CODE
//
// write hands the file to its directory's owner so that a test running as
// an ordinary user can remove what a container running as root made.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fail("usage: fsprobe ls|cat|write|head|exit ARG...")
	}
	arg := os.Args[2]
	switch os.Args[1] {
	case "ls":
		entries, err := os.ReadDir(arg)
		if err != nil {
			fail("ls: %v", err)
		}
		var names []string
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Println(n)
		}
	case "cat":
		b, err := os.ReadFile(arg)
		if err != nil {
			fail("cat: %v", err)
		}
		os.Stdout.Write(b)
	case "write":
		if len(os.Args) < 4 {
			fail("write: need FILE and TEXT")
		}
		if err := os.WriteFile(arg, []byte(strings.Join(os.Args[3:], " ")), 0o644); err != nil {
			fail("write: %v", err)
		}
		fi, err := os.Stat(filepath.Dir(arg))
		if err != nil {
			fail("write: %v", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if err := os.Chown(arg, int(st.Uid), int(st.Gid)); err != nil {
				fail("write: chown: %v", err)
			}
		}
	case "head":
		gitDir := filepath.Join(arg, ".git")
		fi, err := os.Stat(gitDir)
		if err != nil {
			fail("head: %v", err)
		}
		if !fi.IsDir() {
			// A worktree: ".git" is a file "gitdir: <absolute path>".
			b, err := os.ReadFile(gitDir)
			if err != nil {
				fail("head: %v", err)
			}
			dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
			if !ok {
				fail("head: %s is neither a directory nor a gitdir file: %q", gitDir, b)
			}
			gitDir = dir
		}
		b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
		if err != nil {
			fail("head: %v", err)
		}
		fmt.Println(strings.TrimSpace(string(b)))
	case "exit":
		code, err := strconv.Atoi(arg)
		if err != nil {
			fail("exit: %v", err)
		}
		text := strings.Join(os.Args[3:], " ")
		fmt.Println(text)
		fmt.Fprintln(os.Stderr, text)
		os.Exit(code)
	default:
		fail("unknown command %q", os.Args[1])
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fsprobe: "+format+"\n", args...)
	os.Exit(1)
}
