package deptest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportRules: this module keeps every rule of Rules.
func TestImportRules(t *testing.T) {
	module, pkgs, err := Load("../..")
	if err != nil {
		t.Fatal(err)
	}
	if module != "github.com/scion-go/scion" || len(pkgs) < 20 {
		t.Fatalf("go list found module %q with %d packages", module, len(pkgs))
	}
	for _, v := range Check(module, pkgs, Rules) {
		t.Error(v)
	}
}

const mod = "example.com/m"

// pkg is a package of the synthetic module mod with the given dependencies
// (of mod when relative, else standard).
func pkg(rel string, deps ...string) Package {
	p := Package{ImportPath: mod + "/" + rel}
	for _, d := range deps {
		if !strings.Contains(d, ".") && d != "os" && d != "fmt" && d != "net" {
			d = mod + "/" + d
		}
		p.Deps = append(p.Deps, d)
		p.Imports = append(p.Imports, d)
	}
	return p
}

// clean is a module that keeps every rule.
func clean() []Package {
	return []Package{
		pkg("api", "fmt"), pkg("client", "api"), pkg("config", "os"), pkg("cli", "api", "client", "config", "internal/splitplan", "os"), pkg("internal/splitplan", "fmt"),
		pkg("store", "api"), pkg("store/sqlite", "store", "api"), pkg("wire", "api"), pkg("runtime"),
		pkg("runtime/docker", "runtime"), pkg("hub/placement", "api", "fmt"), pkg("hub/authz", "fmt"),
		pkg("hub/transport", "api", "net"), pkg("hub/signin", "api"), pkg("hub/lifecycle", "api"), pkg("hub/storeerr", "api", "store"), pkg("hub/plan", "api", "store", "wire", "hub/authz", "hub/storeerr"),
		pkg("hub/authstore", "api", "hub/authz", "store", "fmt"),
		pkg("hub/httpapi", "api", "hub/authz", "hub/storeerr", "hub/transport", "store", "net"),
		pkg("hub/channel", "api", "hub/plan", "wire"),
		pkg("hub/settings", "api", "hub/authstore", "hub/authz", "hub/httpapi", "hub/storeerr", "hub/transport", "store"),
		pkg("hub/jobs", "api", "store", "wire", "hub/authstore", "hub/authz", "hub/httpapi", "hub/plan", "hub/storeerr", "net"),
		pkg("hub/moves", "api", "store", "hub/authz", "hub/httpapi", "hub/plan", "hub/storeerr"),
		pkg("hub/identity", "api", "hub/authstore", "hub/authz", "hub/httpapi", "hub/signin", "hub/storeerr", "hub/transport", "store", "wire", "net",
			"github.com/coreos/go-oidc/v3/oidc", "golang.org/x/time/rate"),
		pkg("hub/events", "store"), pkg("web", "api", "fmt"),
		pkg("hub", "api", "store", "wire", "hub/placement", "hub/authstore", "hub/authz", "hub/channel", "hub/events", "hub/httpapi", "hub/identity", "hub/jobs", "hub/moves", "hub/lifecycle", "hub/plan", "hub/settings", "hub/signin", "hub/storeerr", "hub/transport", "web", "net"),
		pkg("broker", "api", "config", "runtime", "wire", "broker/idempotency", "broker/portpool", "broker/workspace"), pkg("broker/idempotency", "api", "os"), pkg("broker/portpool", "api", "net"),
		pkg("broker/workspace", "api", "wire", "internal/keylock", "os"), pkg("internal/testenv/gitrepo", "os"),
		pkg("launch", "hub", "broker", "store", "store/sqlite", "runtime", "config"),
		pkg("cmd/scion", "cli", "launch"), pkg("spoke/fleet", "api", "config"),
		pkg("spoke/tunnel", "net"), pkg("spoke/jobs", "api", "spoke/fleet", "config"), pkg("spoke/connect", "spoke/fleet", "spoke/jobs", "spoke/tunnel", "api", "config"),
		pkg("spoke/check", "api", "fmt"), pkg("spoke/check/probe", "api", "config", "spoke/check", "spoke/fleet", "runtime", "wire", "net"),
		pkg("internal/testenv/proxy", "os", "net"), pkg("internal/keylock", "fmt"),
		pkg("internal/testenv", "api", "hub", "broker", "store/sqlite", "internal/keylock"),
	}
}

// TestCheckCatchesViolations: the rules of the table fail on a module
// that breaks them: one dependency added to a clean module per case.
func TestCheckCatchesViolations(t *testing.T) {
	if v := Check(mod, clean(), Rules); len(v) != 0 {
		t.Fatalf("the clean module breaks rules: %q", v)
	}
	for _, tc := range []struct {
		name      string
		pkg, dep  string
		violation string
	}{
		{"cli imports hub", "cli", "hub", "cli imports hub (directly or not); of ours it may import only api, client, client/hubtls, client/idtoken, cli/hubconn, cli/show, config"},
		{"cli imports store", "cli", "store", "cli imports store "},
		{"cli imports store/sqlite", "cli", "store/sqlite", "cli imports store/sqlite "},
		{"cli imports launch", "cli", "launch", "cli imports launch "},
		{"api imports config", "api", "config", "api imports config (directly or not); of ours it may import nothing"},
		{"api imports client", "api", "client", "api imports client "},
		{"internal/testenv/proxy imports api", "internal/testenv/proxy", "api", "internal/testenv/proxy imports api "},
		{"client imports hub", "client", "hub", "client imports hub "},
		{"client imports a module", "client", "github.com/spf13/cobra", "client imports github.com/spf13/cobra (directly or not); of other modules it may import only github.com/coder/websocket"},
		{"config imports wire", "config", "wire", "config imports wire (directly or not); of ours it may import only api"},
		{"config imports client", "config", "client", "config imports client "},
		{"store imports runtime", "store/sqlite", "runtime", "store/sqlite imports runtime (directly or not), which it must not"},
		{"store imports hub", "store", "hub", "store imports hub "},
		{"wire imports store", "wire", "store", "wire imports store "},
		{"runtime imports broker", "runtime/docker", "broker", "runtime/docker imports broker "},
		{"broker imports launch", "broker", "launch", "broker imports launch "},
		{"idempotency imports broker", "broker/idempotency", "broker", "broker/idempotency imports broker "},
		{"portpool imports runtime", "broker/portpool", "runtime", "broker/portpool imports runtime "},
		{"placement imports store", "hub/placement", "store", "hub/placement imports store "},
		{"spoke/fleet imports store", "spoke/fleet", "store", "spoke/fleet imports store (directly or not); of ours it may import only api, config"},
		{"spoke/fleet imports hub", "spoke/fleet", "hub", "spoke/fleet imports hub "},
		{"spoke/fleet imports cli", "spoke/fleet", "cli", "spoke/fleet imports cli "},
		{"spoke/tunnel imports spoke/fleet", "spoke/tunnel", "spoke/fleet", "spoke/tunnel imports spoke/fleet (directly or not); of ours it may import nothing"},
		{"spoke/connect imports wire", "spoke/connect", "wire", "spoke/connect imports wire (directly or not); of ours it may import only api, config, spoke/fleet, spoke/jobs, spoke/tunnel"},
		{"spoke/connect imports broker", "spoke/connect", "broker", "spoke/connect imports broker "},
		{"spoke/jobs imports store", "spoke/jobs", "store", "spoke/jobs imports store (directly or not); of ours it may import only api, spoke/fleet, config"},
		{"spoke/jobs imports hub", "spoke/jobs", "hub", "spoke/jobs imports hub "},
		{"spoke/jobs imports broker", "spoke/jobs", "broker", "spoke/jobs imports broker "},
		{"spoke/jobs imports cli", "spoke/jobs", "cli", "spoke/jobs imports cli "},
		{"spoke/check imports spoke/fleet", "spoke/check", "spoke/fleet", "spoke/check imports spoke/fleet (directly or not); of ours it may import only api"},
		{"spoke/check imports net", "spoke/check", "net", "spoke/check imports net; a pure package does no I/O"},
		{"spoke/check/probe imports broker", "spoke/check/probe", "broker", "spoke/check/probe imports broker "},
		{"spoke/check/probe imports hub", "spoke/check/probe", "hub", "spoke/check/probe imports hub "},
		{"splitplan imports client", "internal/splitplan", "client", "internal/splitplan imports client "},
		{"authz imports os", "hub/authz", "os", "hub/authz imports os; a pure package does no I/O"},
		{"hub imports broker", "hub", "broker", "hub imports broker (directly or not)"},
		{"hub/authstore imports hub/plan", "hub/authstore", "hub/plan", "hub/authstore imports hub/plan (directly or not); of ours it may import only api, hub/authz, store"},
		{"hub/authstore imports hub", "hub/authstore", "hub", "hub/authstore imports hub (directly or not)"},
		{"hub/httpapi imports hub/plan", "hub/httpapi", "hub/plan", "hub/httpapi imports hub/plan "},
		{"hub/httpapi imports wire", "hub/httpapi", "wire", "hub/httpapi imports wire "},
		{"hub/channel imports hub/authstore", "hub/channel", "hub/authstore", "hub/channel imports hub/authstore "},
		{"hub/settings imports wire", "hub/settings", "wire", "hub/settings imports wire "},
		{"hub/jobs imports hub", "hub/jobs", "hub", "hub/jobs imports hub (directly or not)"},
		{"hub/moves imports hub/jobs", "hub/moves", "hub/jobs", "hub/moves imports only"},
		{"hub/jobs imports hub/signin", "hub/jobs", "hub/signin", "hub/jobs imports hub/signin "},
		{"hub/identity imports hub", "hub/identity", "hub", "hub/identity imports hub (directly or not)"},
		{"hub/identity imports hub/plan", "hub/identity", "hub/plan", "hub/identity imports hub/plan "},
		{"hub/identity imports a metrics library", "hub/identity", "github.com/prometheus/client_golang/prometheus",
			"hub/identity imports github.com/prometheus/client_golang/prometheus (directly or not); of other modules it may import only"},
		{"hub/authstore imports store/sqlite", "hub/authstore", "store/sqlite", "hub/authstore imports store/sqlite "},
		{"hub/authstore imports os", "hub/authstore", "os", "hub/authstore imports os; a pure package does no I/O"},
		{"hub imports runtime/docker", "hub", "runtime/docker", "hub imports runtime/docker "},
		{"hub/plan imports os", "hub/plan", "os", "hub/plan imports os; a pure package does no I/O"},
		{"hub/plan imports hub", "hub/plan", "hub", "hub/plan imports hub (directly or not)"},
		{"hub/storeerr imports wire", "hub/storeerr", "wire", "hub/storeerr imports wire (directly or not); of ours it may import only api, store"},
		{"lifecycle imports os", "hub/lifecycle", "os", "hub/lifecycle imports os; a pure package does no I/O"},
		{"hub/signin imports store", "hub/signin", "store", "hub/signin imports store (directly or not); of ours it may import only api"},
		{"hub/transport imports store", "hub/transport", "store", "hub/transport imports store (directly or not); of ours it may import only api"},
		{"hub imports store/sqlite", "hub", "store/sqlite", "hub imports store/sqlite "},
		{"broker imports hub", "broker", "hub", "broker imports hub "},
		{"broker/workspace imports runtime", "broker/workspace", "runtime", "broker/workspace imports runtime "},
		{"broker/workspace imports broker", "broker/workspace", "broker", "broker/workspace imports broker "},
		{"gitrepo imports api", "internal/testenv/gitrepo", "api", "internal/testenv/gitrepo imports api "},
		{"broker imports runtime/docker", "broker", "runtime/docker", "broker imports runtime/docker "},
		{"broker imports store", "broker", "store", "broker imports store "},
		{"launch imports cli", "launch", "cli", "launch imports cli "},
		{"launch imports a harness", "launch", "internal/testenv", "launch imports internal/testenv "},
		{"hub imports a harness", "hub", "internal/testenv", "no product package imports a harness or a benchmark: hub imports internal/testenv"},
		{"a harness imports the CLI", "internal/testenv", "cli", "internal/testenv imports cli "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkgs := clean()
			for i := range pkgs {
				if pkgs[i].ImportPath == mod+"/"+tc.pkg {
					extra := pkg(tc.pkg, tc.dep)
					pkgs[i].Deps = append(pkgs[i].Deps, extra.Deps...)
					pkgs[i].Imports = append(pkgs[i].Imports, extra.Imports...)
				}
			}
			v := Check(mod, pkgs, Rules)
			if len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), tc.violation) {
				t.Fatalf("violations %q, want one saying %q", v, tc.violation)
			}
		})
	}
	// Default deny: a package no row gives an allow-list fails, even one
	// that imports nothing.
	if v := Check(mod, append(clean(), pkg("newthing", "fmt")), Rules); len(v) != 1 || !strings.Contains(v[0], "newthing has no row with an allow-list") {
		t.Fatalf("a package without a row: %q", v)
	}
	if v := Check(mod, clean(), append(slices.Clip(Rules), Rule{Name: "renamed", Pkgs: []string{"gone/..."}, Only: []string{}})); len(v) != 1 || !strings.Contains(v[0], "no package matches gone/...") {
		t.Fatalf("a rule that matches no package: %q", v)
	}
}

// TestLoadAndCheckAModule: Load and Check on a real (temporary) module
// whose api imports its config (so client, which may import api, reaches
// config through it), whose cli imports its hub through another package
// (and in a test file, which is allowed), and whose pure placement package
// runs an HTTP server but may use http.StatusConflict.
func TestLoadAndCheckAModule(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                 "module example.com/m\n\ngo 1.22\n",
		"config/config.go":       "package config\n\nconst X = 1\n",
		"api/api.go":             "package api\n\nimport \"example.com/m/config\"\n\nconst Y = config.X\n",
		"client/client.go":       "package client\n\nimport _ \"example.com/m/api\"\n",
		"hub/hub.go":             "package hub\n\nconst Z = 3\n",
		"hub/handlers/h.go":      "package handlers\n\nimport \"example.com/m/hub\"\n\nconst W = hub.Z\n",
		"cli/cli.go":             "package cli\n\nimport \"example.com/m/hub/handlers\"\n\nconst V = handlers.W\n",
		"cli/cli_test.go":        "package cli\n\nimport _ \"example.com/m/hub\"\n", // tests are outside the rules
		"hub/placement/place.go": "package placement\n\nimport \"net/http\"\n\nvar Code = http.StatusConflict\n\nfunc Serve() error { return http.ListenAndServe(\":0\", nil) }\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	module, pkgs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rules []Rule
	for _, r := range Rules {
		if strings.HasPrefix(r.Name, "api ") || strings.HasPrefix(r.Name, "cli ") || strings.HasPrefix(r.Name, "client ") || strings.Contains(r.Name, "pure") {
			rules = append(rules, r)
		}
	}
	got := strings.Join(Check(module, pkgs, rules), "\n")
	for _, want := range []string{
		"api imports config (directly or not)",
		"cli imports hub/handlers (directly or not)",
		"cli imports hub (directly or not)",
		"hub/placement uses net/http.ListenAndServe at ",
		"client imports config (directly or not)", // through api
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"client imports api", "StatusConflict"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("violations name %q:\n%s", unwanted, got)
		}
	}
}
