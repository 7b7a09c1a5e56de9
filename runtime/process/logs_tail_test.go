package process_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/process"
)

// LogsTail starts at the last N lines, also when following a live agent,
// which then goes on with what the agent writes next.
func TestLogsTail(t *testing.T) {
	rt := newRuntime(t).(*process.Runtime)
	ctx := context.Background()
	base := t.TempDir()
	spec := runtime.Spec{
		AgentID: "tail", RunID: "r1", BrokerID: "b1", ProjectID: "p1",
		Command: []string{"/bin/sh", "-c", `rm -f ctl && mkfifo ctl || exit 90
printf 'l1\nl2\nl3\nl4\n'
read code <ctl
echo last
exit 0`},
		WorkDir: filepath.Join(base, "w"),
	}
	if _, err := rt.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, spec.AgentID); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if out := readLogs(t, rt, "tail"); !strings.Contains(out, "l4\n") {
			return fmt.Errorf("the agent logged %q, want l4", out)
		}
		return nil
	})
	read := func(r io.ReadCloser, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		tail int
		want string
	}{
		{0, "l1\nl2\nl3\nl4\n"},
		{1, "l4\n"},
		{3, "l2\nl3\nl4\n"},
		{4, "l1\nl2\nl3\nl4\n"},
		{99, "l1\nl2\nl3\nl4\n"},
	} {
		if got := read(rt.LogsTail(ctx, "tail", false, tc.tail)); got != tc.want {
			t.Errorf("tail %d = %q, want %q", tc.tail, got, tc.want)
		}
	}
	// Following from the last two lines: those, then the rest as written.
	fl, err := rt.LogsTail(ctx, "tail", true, 2)
	if err != nil {
		t.Fatal(err)
	}
	finish(t, rt, spec, 0)
	if got := read(fl, nil); got != "l3\nl4\nlast\n" {
		t.Errorf("follow tail 2 = %q", got)
	}
}
