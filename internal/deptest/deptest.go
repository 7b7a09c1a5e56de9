// Package deptest holds the module's import rules and the checker that
// enforces them (in the spirit of tailscale's tstest/deptest): Load asks
// `go list` for every package of the module with its non-test imports,
// Check tests them against Rules, and the package's test runs both on this
// module, so `make test` fails when a rule is broken. Test files are
// outside the rules: a test may import a harness such as internal/testenv.
package deptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Package is one package of the module, as `go list` reports it.
type Package struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	// Imports are the direct imports and Deps the transitive ones, of the
	// non-test files (standard library included).
	Imports, Deps []string
}

// Rule is one row of the table. Pkgs and the other patterns are relative
// to the module path: "cli" is that package alone, "store/..." the package
// and every package under it, "..." every package of the module.
type Rule struct {
	Name   string
	Pkgs   []string
	Except []string // packages of Pkgs the rule leaves out
	// Only, when not nil, lists every package of the module the packages
	// may depend on, directly or not (nil: no such limit; empty: none).
	Only []string
	// Deny lists packages of the module they must not depend on,
	// directly or not.
	Deny []string
	// Modules, when not nil, lists every other module (by path) the
	// packages may depend on besides the standard library.
	Modules []string
	// Pure packages do no I/O: they import none of PureDenied directly,
	// and use net/http for nothing but its Status* constants.
	Pure bool
}

// PureDenied are the standard packages a pure package must not import:
// files, processes, signals, sockets, databases, system calls.
var PureDenied = []string{"os", "os/exec", "os/signal", "os/user", "io/ioutil", "net", "net/rpc",
	"net/http/httptest", "database/sql", "syscall", "plugin"}

// Load lists the packages of the module in dir (its ./..., not nested
// modules) and returns the module path.
func Load(dir string) (module string, pkgs []Package, err error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", nil, err
	}
	out, err := goCmd(goBin, dir, "list", "-m")
	if err != nil {
		return "", nil, err
	}
	module = strings.TrimSpace(string(out))
	out, err = goCmd(goBin, dir, "list", "-json=ImportPath,Dir,GoFiles,CgoFiles,Imports,Deps,Error", "./...")
	if err != nil {
		return "", nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Package
			CgoFiles []string
			Error    *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", nil, err
		}
		if p.Error != nil {
			return "", nil, fmt.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		p.GoFiles = append(p.GoFiles, p.CgoFiles...)
		pkgs = append(pkgs, p.Package)
	}
	return module, pkgs, nil
}

func goCmd(goBin, dir string, args ...string) ([]byte, error) {
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// Check returns one line for every way pkgs break rules. A rule whose Pkgs
// match no package is reported too, so that a renamed package cannot
// silently drop its rule.
func Check(module string, pkgs []Package, rules []Rule) []string {
	var out []string
	for _, r := range rules {
		matched := 0
		for _, p := range pkgs {
			rel, ok := relPath(module, p.ImportPath)
			if !ok || !matchAny(r.Pkgs, rel) || matchAny(r.Except, rel) {
				continue
			}
			matched++
			for _, d := range p.Deps {
				drel, ours := relPath(module, d)
				if !ours {
					if r.Modules != nil && !isStd(d) && !slices.ContainsFunc(r.Modules, func(m string) bool { return d == m || strings.HasPrefix(d, m+"/") }) {
						out = append(out, fmt.Sprintf("%s: %s imports %s (directly or not); of other modules it may import %s",
							r.Name, rel, d, onlyText(r.Modules)))
					}
					continue
				}
				if drel == rel {
					continue
				}
				if r.Only != nil && !matchAny(r.Only, drel) {
					out = append(out, fmt.Sprintf("%s: %s imports %s (directly or not); of ours it may import %s",
						r.Name, rel, drel, onlyText(r.Only)))
				}
				if matchAny(r.Deny, drel) {
					out = append(out, fmt.Sprintf("%s: %s imports %s (directly or not), which it must not", r.Name, rel, drel))
				}
			}
			if r.Pure {
				out = append(out, checkPure(r.Name, rel, p)...)
			}
		}
		if matched == 0 {
			out = append(out, fmt.Sprintf("%s: no package matches %s", r.Name, strings.Join(r.Pkgs, ", ")))
		}
	}
	return append(out, unlisted(module, pkgs, rules)...)
}

// unlisted reports the packages no rule gives an allow-list (Only): the
// table denies by default, so a new package must say what it may import.
func unlisted(module string, pkgs []Package, rules []Rule) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := relPath(module, p.ImportPath)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(rules, func(r Rule) bool {
			return r.Only != nil && matchAny(r.Pkgs, rel) && !matchAny(r.Except, rel)
		}) {
			out = append(out, fmt.Sprintf("%s has no row with an allow-list (Only) in the import rules: add one saying what it may import", rel))
		}
	}
	return out
}

// checkPure reports a pure package's I/O imports, and every use of net/http
// but its Status* constants (read from the source: an import alone cannot
// tell a status code from a server).
func checkPure(rule, rel string, p Package) []string {
	var out []string
	for _, imp := range p.Imports {
		if slices.Contains(PureDenied, imp) {
			out = append(out, fmt.Sprintf("%s: %s imports %s; a pure package does no I/O", rule, rel, imp))
		}
	}
	if !slices.Contains(p.Imports, "net/http") {
		return out
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %s: %v", rule, rel, err))
			continue
		}
		local := ""
		for _, is := range f.Imports {
			if path, _ := strconv.Unquote(is.Path.Value); path == "net/http" {
				local = "http"
				if is.Name != nil {
					local = is.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && !strings.HasPrefix(sel.Sel.Name, "Status") {
				out = append(out, fmt.Sprintf("%s: %s uses net/http.%s at %s; a pure package uses net/http for its Status* constants only",
					rule, rel, sel.Sel.Name, fset.Position(sel.Pos())))
			}
			return true
		})
	}
	return out
}

// relPath is path relative to module ("" for the module's root package);
// ok is false for a package of another module.
func relPath(module, path string) (string, bool) {
	if path == module {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, module+"/")
	return rest, ok
}

// isStd follows the Go convention that only standard import paths have
// no dot in their first element.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if p == "..." {
			return true
		}
		if base, ok := strings.CutSuffix(p, "/..."); ok {
			if rel == base || strings.HasPrefix(rel, base+"/") {
				return true
			}
		} else if rel == p {
			return true
		}
	}
	return false
}

func onlyText(only []string) string {
	if len(only) == 0 {
		return "nothing"
	}
	return "only " + strings.Join(only, ", ")
}
