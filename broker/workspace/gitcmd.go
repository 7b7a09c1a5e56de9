package workspace

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
)

// gitRunner runs the git CLI for the broker. The broker runs unattended,
// so git must never wait for a human: no terminal prompts, no askpass
// programs, ssh in batch mode. Its environment is reduced to what git and
// its transports need, so variables of the broker's own (GIT_DIR from a
// parent git, say) cannot redirect it.
type gitRunner struct {
	bin string
	env []string
	dir string // the working directory when run is given none
}

// gitEnvPassthrough are the broker's variables git may see: where things
// are, the ssh agent, proxies and CA bundles the operator set up.
var gitEnvPassthrough = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_CONFIG_HOME",
	"SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_COMMAND",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
}

func newGitRunner(bin string, extra []string) gitRunner {
	env := []string{
		"LC_ALL=C", // stderr ends up in error messages; keep it predictable
		"GIT_TERMINAL_PROMPT=0",
		"GCM_INTERACTIVE=never", // Git Credential Manager must not pop up
	}
	for _, k := range gitEnvPassthrough {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if os.Getenv("GIT_SSH_COMMAND") == "" && os.Getenv("GIT_SSH") == "" {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	// Later entries win in exec, so the operator's extras override ours.
	return gitRunner{bin: bin, env: append(env, extra...)}
}

// gitSafety is passed to every command. Hooks and fsmonitor are commands
// that git runs from repository files, and the base clone's git directory
// is shared with worktree agents; ext:: and fd:: remotes run commands too.
// An empty askPass makes git fall back to the (disabled) terminal prompt
// even if the operator's config names a GUI program.
var gitSafety = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.askPass=",
	"-c", "protocol.ext.allow=never",
	"-c", "protocol.fd.allow=never",
}

// gitWaitDelay bounds how long a killed git may hold its output open
// through children (ssh, remote helpers) that outlive it.
const gitWaitDelay = 2 * time.Second

// run runs git with args in dir ("" for the runner's own, which
// NewGit makes an empty directory; never the broker's) and
// returns its standard output. A failure is a *gitError, or wraps ctx's
// error when ctx ended, so callers can tell a timeout from a bad remote.
func (g gitRunner) run(ctx context.Context, dir string, args ...string) (string, error) {
	if dir == "" && g.dir != "" {
		if err := os.Mkdir(g.dir, 0o500); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("git's working directory: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, g.bin, append(append([]string{}, gitSafety...), args...)...)
	cmd.Dir = cmp.Or(dir, g.dir)
	cmd.Env = g.env
	cmd.WaitDelay = gitWaitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("git %s: %w", gitSubcommand(args), ctx.Err())
	}
	ge := &gitError{Op: gitSubcommand(args), Stderr: tail(stderr.String(), 2000), Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.ExitCode = ee.ExitCode()
	}
	return "", ge
}

// gitSubcommand names the command for messages: the first argument that
// is not a global option.
func gitSubcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c" || a == "-C":
			i++
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return "git"
}

// gitError is a git command that ran and failed (or could not start).
type gitError struct {
	Op       string
	ExitCode int // -1 when git did not run to an exit
	Stderr   string
	Err      error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return redactURLs(fmt.Sprintf("git %s failed: %s", e.Op, strings.Join(strings.Fields(msg), " ")))
}

func (e *gitError) Unwrap() error { return e.Err }

// exitCode is the exit status of a git that ran and failed, or -1.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) && ge.Err != nil {
		return ge.ExitCode
	}
	return -1
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// redactURLs hides credentials embedded in URLs in a message: remotes like
// https://user:token@host/repo.git reach our errors and logs through git's
// stderr and our own wording (api.RedactURLs, the one rule for them).
func redactURLs(s string) string { return api.RedactURLs(s) }
