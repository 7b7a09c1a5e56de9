package cli

import (
	"strings"
	"testing"

	"github.com/scion-go/scion/internal/testenv"
)

func TestErrorFormatAndExitCodes(t *testing.T) {
	setHome(t)
	// A local error: no Hub anywhere.
	r := runCLI(t, "", "list")
	if r.code != 1 || !strings.HasPrefix(r.err, "error: no Hub selected") || !strings.Contains(r.err, "scion server start --workstation") {
		t.Errorf("%+v", r)
	}
	// A Hub error: code and message.
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, "wrong")
	r = runCLI(t, "", "project", "list")
	if r.code != 1 || r.err != "error: unauthorized: invalid or expired token\n" || r.out != "" {
		t.Errorf("%+v", r)
	}
	// An unreachable Hub names it.
	r = runCLI(t, "", "list", "--hub", "http://127.0.0.1:1")
	if r.code != 1 || !strings.HasPrefix(r.err, "error: cannot reach the Hub at http://127.0.0.1:1") {
		t.Errorf("%+v", r)
	}
	// Help is not an error.
	if r := runCLI(t, "", "--help"); r.code != 0 || !strings.Contains(r.out, "runtime-broker") {
		t.Errorf("help: %+v", r)
	}
	if r := runCLI(t, "", "hub"); r.code != 0 || !strings.Contains(r.out, "brokers") {
		t.Errorf("bare group: %+v", r)
	}
}

// Bad command lines exit 2 with a clear message and never reach the Hub.
func TestUsageErrors(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "scion"`},
		{[]string{"hub", "bogus"}, `unknown command "bogus" for "scion hub"`},
		{[]string{"runtime-broker", "frob"}, `unknown command "frob"`},
		{[]string{"list", "--nope"}, "unknown flag: --nope"},
		{[]string{"list", "-o", "xml"}, `invalid --output "xml"`},
		{[]string{"list", "-o", "jsonpath={.slug"}, `invalid --output "jsonpath={.slug"`},
		{[]string{"list", "-o", "go-template={{.slug"}, `invalid --output "go-template={{.slug"`},
		{[]string{"list", "-o", "yaml=x"}, `takes no expression`},
		{[]string{"list", "extra"}, "takes no arguments"},
		{[]string{"project", "create", "web", "--sharing-mode", "copy"}, `invalid --sharing-mode "copy"`},
		{[]string{"project", "set", "web", "--sharing-mode", ""}, `invalid --sharing-mode ""`},
		{[]string{"project", "set", "web"}, "nothing to set"},
		{[]string{"project", "create"}, "takes 1 argument(s) (name), got 0"},
		{[]string{"project", "create", "a b"}, `invalid project name "a b"`},
		{[]string{"project", "create", "-x"}, "unknown shorthand flag"},
		{[]string{"project", "create", "x/y"}, `invalid project name "x/y"`},
		{[]string{"project", "create", strings.Repeat("a", 64)}, "invalid project name"},
		{[]string{"create", "fixer", "--env", "NOEQUALS"}, `invalid --env "NOEQUALS": use KEY=VALUE`},
		{[]string{"create", "fixer", "--env", "=v"}, `"" is not a valid variable name`},
		{[]string{"create", "fixer", "--env", "1A=v"}, `"1A" is not a valid variable name`},
		{[]string{"create", "fixer", "--env", "A-B=v"}, `"A-B" is not a valid variable name`},
		{[]string{"create", ".hidden"}, `invalid agent name ".hidden"`},
		{[]string{"create", "fixer", "claude"}, `unexpected argument "claude": put the agent's command after --`},
		{[]string{"create", "--", "claude"}, "needs the agent's name"},
		{[]string{"start"}, "needs the agent's name"},
		{[]string{"create", "fixer", "--project", ""}, "--project must not be empty"},
		{[]string{"create", "fixer", "--harness"}, "flag needs an argument"},
		{[]string{"list", "--all", "--project", "web"}, "exclude each other"},
		{[]string{"logs", "a", "--tail", "-1"}, "invalid --tail -1"},
		{[]string{"logs", "a", "--tail", "many"}, "invalid argument"},
		{[]string{"stop"}, "takes one or more agent names, or --all"},
		{[]string{"stop", "a", "--all"}, "give agent names or --all, not both"},
		{[]string{"hub", "add", "team"}, "takes 2 argument(s)"},
		{[]string{"hub", "add", "team", "hub.example.com"}, "is not an http(s) URL"},
		{[]string{"hub", "add", "my hub", "http://x"}, `invalid hub name "my hub"`},
		{[]string{"hub", "limits", "set"}, "nothing to set"},
		{[]string{"hub", "limits", "set", "--max-agents-per-broker", "-3"}, "must be 0 (unlimited) or more"},
		{[]string{"hub", "settings", "set"}, "nothing to set"},
		{[]string{"hub", "brokers", "join-token", "create", "--ttl", "-1h"}, "invalid --ttl"},
		{[]string{"hub", "brokers", "join-token", "create", "--ttl", "soon"}, "invalid argument"},
		{[]string{"runtime-broker", "register", "--name", "bad name"}, `invalid broker name "bad name"`},
		{[]string{"runtime-broker", "withdraw"}, "--project is required"},
		// The Hub's name rule and input bounds, checked before a round trip.
		{[]string{"create", "Fixer"}, `invalid agent name "Fixer"`},
		{[]string{"create", "a_b"}, `invalid agent name "a_b"`},
		{[]string{"project", "create", "a.b"}, `invalid project name "a.b"`},
		{[]string{"project", "create", "web", "--git-remote", "https://h/r.git\n[core]"}, "gitRemote holds a control character"},
		{[]string{"project", "set", "web", "--git-remote", strings.Repeat("h", 3000)}, "gitRemote is too long"},
		{[]string{"project", "set", "web", "--active-profile", "../../etc"}, `invalid --active-profile profile name "../../etc"`},
		{[]string{"create", "fixer", "-p", "../../etc"}, `invalid --profile profile name "../../etc"`},
		{[]string{"create", "fixer", "--harness", "../../sh"}, `unknown --harness "../../sh"`},
		{[]string{"hub", "settings", "set", "--default-harness", "../../sh"}, `unknown --default-harness "../../sh"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			before := hubRequests(t, e)
			r := runCLI(t, "", tc.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", r.code, r.err)
			}
			if !strings.HasPrefix(r.err, "error: ") || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "--help' for usage") {
				t.Errorf("stderr %q, want it to contain %q", r.err, tc.want)
			}
			if hubRequests(t, e) != before {
				t.Errorf("a bad command line reached the Hub")
			}
		})
	}
}
