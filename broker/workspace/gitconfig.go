package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The base clone's git directory is shared with every worktree agent of
// the project: their worktrees commit into it, so a runtime that isolates
// agents has to let them write it. Its config is therefore agent-written
// input, and much of git config is a command git runs (core.sshCommand,
// core.fsmonitor, credential helpers, filter drivers, include.path to pull
// in more, remote.origin.uploadpack, ...). Before the broker runs git
// there, it rewrites the config down to an allowlist of inert keys plus
// the remote it knows, so nothing an agent wrote can run on the broker.

// allowedBaseConfig reports whether a base clone may keep an entry:
// repository format, branch tracking and identity. The remote is written
// separately.
func allowedBaseConfig(section, subsection, name, value string) bool {
	switch section {
	case "core":
		return subsection == "" && slices.Contains([]string{
			"repositoryformatversion", "filemode", "logallrefupdates", "symlinks", "ignorecase", "precomposeunicode",
		}, name)
	case "extensions":
		return subsection == "" && name == "objectformat"
	case "user":
		return subsection == "" && (name == "name" || name == "email")
	case "branch":
		return subsection != "" && (name == "merge" || (name == "remote" && value == "origin"))
	}
	return false
}

type gitConfigEntry struct{ section, subsection, name, value string }

// sanitizeBaseConfig rewrites gitDir/config to the allowlist, with origin
// at remote (or at the URL it already has when remote is "").
func (w *Git) sanitizeBaseConfig(ctx context.Context, gitDir, remote string) error {
	path := filepath.Join(gitDir, "config")
	// With --file, include directives are not followed; listing runs
	// nothing from the file.
	out, err := w.git.run(ctx, "", "--git-dir="+gitDir, "config", "--file", path, "--null", "--list")
	if err != nil {
		return fmt.Errorf("base clone config: %w", err)
	}
	var keep []gitConfigEntry
	url := remote
	for item := range strings.SplitSeq(out, "\x00") {
		key, value, _ := strings.Cut(item, "\n")
		e, ok := splitConfigKey(key)
		if !ok {
			continue
		}
		e.value = value
		switch {
		case e.section == "remote" && e.subsection == "origin" && e.name == "url":
			if remote == "" {
				url = value // the last one wins, as in git
			}
		case allowedBaseConfig(e.section, e.subsection, e.name, e.value):
			keep = append(keep, e)
		}
	}
	if url != "" {
		keep = append(keep,
			gitConfigEntry{"remote", "origin", "url", url},
			gitConfigEntry{"remote", "origin", "fetch", "+refs/heads/*:refs/remotes/origin/*"})
	}
	return writeFileAtomic(path, formatGitConfig(keep))
}

// splitConfigKey splits git's section.subsection.name (the subsection may
// itself contain dots). Entries with characters a config file cannot hold
// are dropped.
func splitConfigKey(key string) (gitConfigEntry, bool) {
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if first <= 0 || last == len(key)-1 || strings.ContainsAny(key, "\n\x00") {
		return gitConfigEntry{}, false
	}
	e := gitConfigEntry{section: strings.ToLower(key[:first]), name: strings.ToLower(key[last+1:])}
	if last > first {
		e.subsection = key[first+1 : last]
	}
	return e, true
}

// formatGitConfig writes entries grouped by section, every value quoted so
// that no value can be read as anything else.
func formatGitConfig(entries []gitConfigEntry) []byte {
	var b strings.Builder
	var cur *gitConfigEntry
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	for i, e := range entries {
		if cur == nil || cur.section != e.section || cur.subsection != e.subsection {
			if e.subsection == "" {
				fmt.Fprintf(&b, "[%s]\n", e.section)
			} else {
				fmt.Fprintf(&b, "[%s \"%s\"]\n", e.section, q.Replace(e.subsection))
			}
			cur = &entries[i]
		}
		fmt.Fprintf(&b, "\t%s = \"%s\"\n", e.name, q.Replace(e.value))
	}
	return []byte(b.String())
}

// writeFileAtomic replaces path so that git never reads half a file.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}
