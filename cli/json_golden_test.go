package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var updateGolden = flag.Bool("update", false, "rewrite cli/testdata/json/*.keys from what the commands print")

// jsonExempt are the commands whose -o json is not one JSON document on
// stdout, each with why; every other command has a golden case below,
// which TestEveryCommandHasAJSONGolden checks.
var jsonExempt = map[string]string{
	"scion agent-demo":                "hidden: the demo agent's program, run inside an agent",
	"scion install-binary":            "hidden: copies the binary into an image",
	"scion server start":              "a daemon: it logs (--log-format json)",
	"scion runtime-broker start":      "a daemon: it logs (--log-format json)",
	"scion attach":                    "the agent's terminal, byte for byte",
	"scion exec":                      "the command's own output, byte for byte",
	"scion image build-demo":          "needs a Docker Engine: TestDemoImageBuild (test/system) reads its -o json",
	"scion hub auth login":            "interactive sign-in with an OIDC provider: TestHubAuthLogin reads its -o json",
	"scion job run":                   "needs a Kubernetes cluster: test/system's spoke Job tests read its -o json",
	"scion job list":                  "needs a Kubernetes cluster: test/system's spoke Job tests read its -o json",
	"scion job show":                  "needs a Kubernetes cluster: test/system's spoke Job tests read its -o json",
	"scion job logs":                  "needs a Kubernetes cluster: test/system's spoke Job tests read its -o json",
	"scion job cancel":                "needs a Kubernetes cluster: test/system's spoke Job tests read its -o json",
	"scion check":                     "probes this machine's runtimes: TestCheckJSON reads its -o json",
	"scion runtime-broker plan-split": "needs a legacy broker with flat instances: TestPlanSplit* read its -o json",
	"scion reincarnate":               "needs a second broker over a shared export: TestReincarnate* read its -o json",
}

type goldenCase struct {
	name string   // the golden file's name
	args []string // the command line (-o json is added)
}

// TestJSONGoldens runs every command with -o json against a real Hub
// (internal/testenv) and checks its output is one JSON document whose
// keys (every path, arrays folded) are the golden file's: a key renamed
// or dropped is a change scripts see, and must be made on purpose
// (go test ./cli -run TestJSONGoldens -update).
func TestJSONGoldens(t *testing.T) {
	setHome(t)
	e := agentHub(t)
	tok := e.AdminToken
	_ = tok
	cases := []goldenCase{
		{"version", []string{"version"}},
		{"hub-add", []string{"hub", "add", "other", e.URL}},
		{"hub-use", []string{"hub", "use", "team"}},
		{"hub-list", []string{"hub", "list"}},
		{"hub-brokers", []string{"hub", "brokers"}},
		{"hub-brokers-set", []string{"hub", "brokers", "set", "laptop", "--max-agents", "5"}},
		{"hub-brokers-join-token-create", []string{"hub", "brokers", "join-token", "create", "--name", "later"}},
		{"hub-limits-get", []string{"hub", "limits", "get"}},
		{"hub-limits-set", []string{"hub", "limits", "set", "--max-agents-per-broker", "0"}},
		{"hub-settings-get", []string{"hub", "settings", "get"}},
		{"hub-settings-set", []string{"hub", "settings", "set", "--default-image", "img:1"}},
		{"hub-metrics-tokens-create", []string{"hub", "metrics-tokens", "create", "--name", "prom"}},
		{"hub-metrics-tokens-list", []string{"hub", "metrics-tokens", "list"}},
		{"hub-secret-set", []string{"hub", "secret", "set", "API_KEY", "--project", "web", "--from-file", writeTemp(t, "s3cr3t-value")}},
		{"hub-secret-list", []string{"hub", "secret", "list", "--project", "web"}},
		{"hub-secret-delete", []string{"hub", "secret", "delete", "API_KEY", "--project", "web"}},
		{"hub-tokens-create", []string{"hub", "tokens", "create", "--name", "ci", "--project", "web", "--scope", "project:read"}},
		{"hub-tokens-list", []string{"hub", "tokens", "list"}},
		{"hub-users-list", []string{"hub", "users", "list"}},
		{"project-create", []string{"project", "create", "scratch"}},
		{"project-list", []string{"project", "list"}},
		{"project-show", []string{"project", "show", "scratch"}},
		{"project-set", []string{"project", "set", "scratch", "--default-broker", "vm"}},
		{"runtime-broker-register", []string{"runtime-broker", "register", "--name", "golden"}},
		{"runtime-broker-provide", []string{"runtime-broker", "provide", "--project", "scratch"}},
		{"runtime-broker-status", []string{"runtime-broker", "status"}},
		{"runtime-broker-withdraw", []string{"runtime-broker", "withdraw", "--project", "scratch"}},
		{"runtime-broker-deregister", []string{"runtime-broker", "deregister"}},
		{"project-delete", []string{"project", "delete", "scratch"}},
		{"create", []string{"create", "g1", "--project", "web", "--broker", "vm", "--", "x"}},
		{"start", []string{"start", "g1", "--project", "web"}},
		{"list", []string{"list", "--project", "web"}},
		{"logs", []string{"logs", "g1", "--project", "web"}},
		{"stop", []string{"stop", "g1", "--project", "web"}},
		{"restart", []string{"restart", "g1", "--project", "web"}},
		{"suspend", []string{"suspend", "g1", "--project", "web"}},
		{"resume", []string{"resume", "g1", "--project", "web"}},
		{"reincarnate", []string{"reincarnate", "g1", "--project", "web"}},
		{"describe-agent", []string{"describe", "agent", "g1", "--project", "web"}},
		{"describe-broker", []string{"describe", "broker", "vm"}},
		{"describe-project", []string{"describe", "project", "web"}},
		{"delete", []string{"delete", "g1", "--project", "web"}},
	}
	// Two need an ID another command prints first.
	var tokens []struct{ ID string }
	var users []struct{ ID, Role string }
	var join struct{ Token string }
	for _, c := range cases {
		out := goldenRun(t, c)
		switch c.name {
		case "hub-brokers-join-token-create":
			_ = json.Unmarshal([]byte(out), &join)
		case "hub-tokens-list":
			_ = json.Unmarshal([]byte(out), &tokens)
		case "hub-users-list":
			_ = json.Unmarshal([]byte(out), &users)
		case "hub-metrics-tokens-list":
			var ms []struct{ ID string }
			_ = json.Unmarshal([]byte(out), &ms)
			if len(ms) > 0 {
				goldenRun(t, goldenCase{"hub-metrics-tokens-revoke", []string{"hub", "metrics-tokens", "revoke", ms[0].ID}})
			}
		}
	}
	if len(tokens) == 0 || len(users) == 0 {
		t.Fatalf("no token (%d) or user (%d) to act on", len(tokens), len(users))
	}
	goldenRun(t, goldenCase{"hub-tokens-revoke", []string{"hub", "tokens", "revoke", tokens[0].ID}})
	if join.Token == "" {
		t.Fatal("join-token create printed no token")
	}
	goldenRun(t, goldenCase{"runtime-broker-join", []string{"runtime-broker", "join", "--token", join.Token}})
	goldenRun(t, goldenCase{"hub-users-set-role", []string{"hub", "users", "set-role", users[0].ID, users[0].Role}})
}

// goldenRun runs c with -o json, checks its output is one JSON document
// and its keys are the golden file's, and returns the output.
func goldenRun(t *testing.T, c goldenCase) string {
	t.Helper()
	args := slices.Clone(c.args)
	i := slices.Index(args, "--") // -o json goes before an agent's command
	if i < 0 {
		i = len(args)
	}
	r := runCLI(t, "", slices.Concat(args[:i], []string{"-o", "json"}, args[i:])...)
	if r.code != 0 {
		t.Fatalf("scion %s -o json: exit %d\nstdout: %s\nstderr: %s", strings.Join(c.args, " "), r.code, r.out, r.err)
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(r.out))
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("scion %s -o json is not one JSON document (%v):\n%s", strings.Join(c.args, " "), err, r.out)
	}
	got := strings.Join(keyPaths(v), "\n") + "\n"
	path := filepath.Join("testdata", "json", c.name+".keys")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make it with -update)", err)
	}
	if got != string(want) {
		t.Errorf("scion %s -o json: keys differ from %s\ngot:\n%swant:\n%s", strings.Join(c.args, " "), path, got, want)
	}
	goldenSeen[commandOf(c.args)] = true
	return r.out
}

// goldenSeen are the commands a golden case ran.
var goldenSeen = map[string]bool{}

// commandOf is the command path an argument list runs.
func commandOf(args []string) string {
	c, _, err := NewRoot(Daemons{}).Find(args)
	if err != nil {
		return ""
	}
	return c.CommandPath()
}

// keyPaths lists every key path of v: ".a.b" for objects, "[]" for the
// elements of an array (their keys merged), sorted.
func keyPaths(v any) []string {
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := prefix + "." + k
				set[p] = true
				walk(p, e)
			}
		case []any:
			set[prefix+"[]"] = true
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		}
	}
	walk("", v)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestEveryCommandHasAJSONGolden: a command added without a golden case
// (or a reason in jsonExempt) fails here. It runs after TestJSONGoldens
// (file order); run alone it runs the goldens first.
func TestEveryCommandHasAJSONGolden(t *testing.T) {
	if len(goldenSeen) == 0 {
		t.Run("goldens", TestJSONGoldens)
	}
	var missing []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() || c.CommandPath() == "scion hub brokers" {
			if p := c.CommandPath(); !goldenSeen[p] && jsonExempt[p] == "" {
				missing = append(missing, p)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot(Daemons{}))
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("commands with neither a -o json golden case nor a reason in jsonExempt:\n%s", strings.Join(missing, "\n"))
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "value")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
