package hub_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// The exit item of an exec stream carries only the exit code: it used to
// repeat the data of the output item before it (the Hub decoded every item
// into the same struct, and the exit item has no data to overwrite it).
func TestExecExitFrameHasNoData(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(api.ExecRequest{Command: []string{"echo", "only once"}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/api/v1/agents/w/exec?project=default", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("exec: %d %s", resp.StatusCode, b)
	}
	var items []api.ExecOutput
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var o api.ExecOutput
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		items = append(items, o)
	}
	if len(items) < 2 {
		t.Fatalf("items = %+v", items)
	}
	var stdout strings.Builder
	for _, o := range items[:len(items)-1] {
		stdout.Write(o.Data)
	}
	last := items[len(items)-1]
	if last.Stream != "exit" || last.ExitCode == nil || *last.ExitCode != 0 || len(last.Data) != 0 {
		t.Errorf("exit item = %+v (data %q), want exit code 0 and no data", last, last.Data)
	}
	if stdout.String() != "only once\n" {
		t.Errorf("stdout = %q", stdout.String())
	}
}

// `scion logs --tail N` starts with the last N lines (the broker used to
// send the whole log whatever N was).
func TestLogsTailThroughHub(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "w", Project: "default", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	a, err := e.Admin.GetAgent(ctx, "w", "default")
	if err != nil {
		t.Fatal(err)
	}
	rt := e.Brokers()[0].Runtime
	before, err := readLogs(e, ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.WriteLog(a.ID, "one\ntwo\nthree\nfour"); err != nil {
		t.Fatal(err)
	}
	all := before + "one\ntwo\nthree\nfour"
	for _, tc := range []struct {
		tail int
		want string
	}{
		{0, all},
		{1, "four"},
		{2, "three\nfour"},
		{1000, all},
	} {
		got, err := readLogs(e, ctx, tc.tail)
		if err != nil || got != tc.want {
			t.Errorf("tail %d: %q, %v; want %q", tc.tail, got, err, tc.want)
		}
	}
}

func readLogs(e *testenv.Env, ctx context.Context, tail int) (string, error) {
	rc, err := e.Admin.Logs(ctx, "w", "default", false, tail)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}
