package system

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

var (
	scionBin   string // the binary under test
	buildErr   error  // why there is no binary, if there is none
	moduleRoot string // the repository root (holds go.mod)
)

// TestMain builds bin/scion once for the whole package (or takes
// $SCION_BIN), the way `make build` does: static, CGO_ENABLED=0.
func TestMain(m *testing.M) {
	flag.Parse()
	raiseParallel()
	os.Exit(runMain(m))
}

// systemParallel is how many t.Parallel system tests run at once unless
// -parallel says otherwise. The default, GOMAXPROCS (2 on the CI
// machine), fits tests that burn the test binary's CPU; these mostly wait
// on the processes they started (heartbeat graces, Job deadlines, kill -9
// and restart, the Docker Engine), so four at a time keep the two cores
// busy without making a wait-bound test wait for a slot. Each parallel
// test has its own homes, free ports, port range, names and namespaces.
// Three: at four, a clean-clone CI run saw load-bound failures (a Docker
// workstation on the default port range meeting another's host port, a
// loopback dial in spoke/tunnel timing out beside the system tests).
//
// Go runs the tests that do not call t.Parallel first, one after the
// other, and only then the parallel ones: a sequential test adds its whole
// length to the package's. Only the tests that measure the Hub's latency
// under attack (TestHubUnderHostileConnections, TestSlowUploadsLockNobodyOut)
// stay sequential, so that no other test of this process shares the
// machine with their measurement (make test runs them before the rest
// of the suite, alone: other packages' tests disturb them too); every
// other test calls t.Parallel. The
// package's long pole runs in a process of its own that starts its work
// the moment they end, whatever the slots (background_test.go).
const systemParallel = 3

// raiseParallel sets -test.parallel to systemParallel when the command
// line did not set it.
func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(systemParallel))
	}
}

func runMain(m *testing.M) int {
	moduleRoot, buildErr = findModuleRoot()
	tmp, err := os.MkdirTemp("", "scion-system-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "system tests:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if buildErr == nil {
		scionBin, buildErr = binary(tmp)
	}
	if buildErr != nil {
		fmt.Fprintln(os.Stderr, "system tests: no scion binary:", buildErr)
	}
	defer dockerCleanupAfterAll()
	defer spokeCleanupAfterAll()
	defer kubeCleanupAfterAll()
	startBackground()
	return m.Run()
}

// findModuleRoot walks up to the directory with go.mod: from the working
// directory, which go test sets to this package's directory, else from
// this file's path as compiled (which -trimpath, as make test builds,
// makes relative).
func findModuleRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, start := range starts {
		for dir := start; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
			if parent := filepath.Dir(dir); parent == dir {
				break
			}
		}
	}
	return "", fmt.Errorf("no go.mod above %v", starts)
}

func binary(tmp string) (string, error) {
	if b := os.Getenv("SCION_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("SCION_BIN: %w", err)
		}
		return abs, nil
	}
	out := filepath.Join(tmp, "scion")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-o", out, "./cmd/scion")
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/scion: %v\n%s", err, b)
	}
	return out, nil
}

// inCI is the CI=true rule: a missing real part fails, it never skips.
func inCI() bool { return os.Getenv("CI") == "true" }

// skipOrFail skips the test, except under CI=true where it fails.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI=true, so not skipping: "+format, args...)
	}
	t.Skipf(format, args...)
}

// requireBinary stops a test that has no binary to run.
func requireBinary(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		skipOrFail(t, "no scion binary: %v", buildErr)
	}
}
