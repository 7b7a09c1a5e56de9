package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wantCodes is every error code with its HTTP status, written out: a code
// added to the table without a row here (or a status changed) fails
// TestCodeTable, so each change of the API's errors is a visible change of
// this list. The statuses the upstream spec names are the spec's.
var wantCodes = map[string]int{
	"invalid_request":       400,
	"authorization_pending": 400,
	"slow_down":             400,
	"expired_token":         400,
	"access_denied":         400,

	"unauthorized": 401,

	"forbidden":                   403,
	"runtime_broker_not_provider": 403,

	"not_found":                404,
	"agent_not_found":          404,
	"project_not_found":        404,
	"runtime_broker_not_found": 404, // spec
	"secret_not_found":         404,
	"access_token_not_found":   404,
	"user_not_found":           404,
	"job_not_found":            404,
	"cluster_not_found":        404,

	"method_not_allowed": 405,

	"already_exists":                    409,
	"conflict":                          409,
	"invalid_phase":                     409,
	"no_runtime_broker":                 409,
	"runtime_broker_selection_required": 409,
	"global_project_disabled":           409, // spec
	"profile_not_available":             409,
	"idempotency_key_reused":            409,
	"runtime_broker_missing":            409, // spec
	"runtime_broker_has_agents":         409,
	"runtime_target_move_unsupported":   409, // spec
	"agent_move_refused":                409,
	"runtime_target_pin_stale":          409, // spec
	"runtime_target_mismatch":           409, // spec
	"broker_reservation_scope_conflict": 409, // spec
	"experiment_disabled":               409,

	"attach_closed":                 410,
	"precondition_failed":           412,
	"agent_move_unsupported_broker": 412, // spec: an older broker gets 412

	"request_too_large":      413,
	"unsupported_media_type": 415,

	"quota_exceeded": 429, // spec
	"rate_limited":   429,

	"internal": 500,

	"unsupported_operation":           501,
	"secrets_not_configured":          501,
	"oidc_not_configured":             501,
	"agent_move_recreate_not_enabled": 501, // spec

	"runtime_error":       502,
	"oidc_provider_error": 502,

	"runtime_broker_offline":         503,
	"runtime_broker_unavailable":     503,
	"default_runtime_broker_offline": 503,
	"port_pool_exhausted":            503,

	"runtime_broker_timeout": 504,
}

func TestCodeTable(t *testing.T) {
	for code, want := range wantCodes {
		if got, ok := codeStatus[code]; !ok {
			t.Errorf("%s: not in the code table (want %d)", code, want)
		} else if got != want {
			t.Errorf("%s: status %d in the table, want %d", code, got, want)
		}
		if got := StatusForCode(code); got != want {
			t.Errorf("StatusForCode(%s) = %d, want %d", code, got, want)
		}
		if e := Errorf(code, "m"); e.Status != want || e.Code != code {
			t.Errorf("Errorf(%s) = %d %s", code, e.Status, e.Code)
		}
	}
	for code, s := range codeStatus {
		if _, ok := wantCodes[code]; !ok {
			t.Errorf("%s (%d): in the code table but not in wantCodes; add its row", code, s)
		}
		if s == http.StatusInternalServerError && code != CodeInternal {
			t.Errorf("%s answers 500: only %s may", code, CodeInternal)
		}
		if s < 400 || s > 599 {
			t.Errorf("%s: %d is not an error status", code, s)
		}
	}
	// The shorthands build their code's row.
	for _, e := range []*Error{BadRequest("m"), Unauthorized("m"), Forbidden("m"), Internal("m"),
		NotFound(CodeSecretNotFound, "m"), Conflict(CodeBrokerMissing, "m")} {
		if e.Status != wantCodes[e.Code] {
			t.Errorf("%s: status %d", e.Code, e.Status)
		}
	}
	// A response without a code gets its status's general code, which
	// maps back to that status.
	for s, code := range statusCode {
		if CodeForStatus(s) != code || StatusForCode(code) != s {
			t.Errorf("status %d -> %s -> %d", s, CodeForStatus(s), StatusForCode(code))
		}
	}
	if CodeForStatus(418) != CodeInvalidRequest || CodeForStatus(599) != CodeInternal || StatusForCode("no_such_code") != 500 {
		t.Error("fallbacks for unknown statuses and codes")
	}
}

// Every Code* constant of this package is in the table.
func TestEveryCodeConstantIsInTheTable(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					code, ok := stringLit(vs.Values[i])
					if !ok {
						continue
					}
					n++
					if _, ok := codeStatus[code]; !ok {
						t.Errorf("%s = %q (%s) has no row in the code table", name.Name, code, fset.Position(name.Pos()))
					}
				}
			}
		}
	}
	if n < len(wantCodes) {
		t.Fatalf("found %d Code constants, fewer than the %d codes: the parse missed some", n, len(wantCodes))
	}
}

// Every code the rest of the code base uses as a string rather than
// through a constant (a hand-written JSON body, a literal passed to a
// constructor or compared with an error's Code) is in the table, and
// every "<status> <code>" the docs quote is the table's.
func TestEveryCodeUsedIsInTheTable(t *testing.T) {
	used := map[string][]string{} // code -> where
	fset := token.NewFileSet()
	// Every package of the module, as go list sees it: a new directory
	// cannot fall outside the scan.
	files := moduleGoFiles(t)
	if len(files) < 100 {
		t.Fatalf("go list found %d files of the module", len(files))
	}
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range codeLiterals(f) {
			used[lit.code] = append(used[lit.code], fset.Position(lit.pos).String())
		}
	}
	for code, where := range used {
		if _, ok := codeStatus[code]; !ok {
			t.Errorf("code %q is used but has no row in the code table: %s", code, strings.Join(where, ", "))
		}
	}

	docs, _ := filepath.Glob("../docs/*.md")
	docs = append(docs, "../README.md")
	quoted := regexp.MustCompile("\\b([45][0-9][0-9])(?: \\| |\\s+)`?([a-z]+(?:_[a-z]+)+)`?")
	n := 0
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
			s, _ := strconv.Atoi(m[1])
			got, ok := codeStatus[m[2]]
			switch {
			case !ok:
				t.Errorf("%s quotes %s %s, a code that is not in the table", path, m[1], m[2])
			case got != s:
				t.Errorf("%s quotes %s %s; the table says %d", path, m[1], m[2], got)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("no status and code quoted in the docs: the pattern is broken")
	}
}

// The scan finds a code literal in each of the places one is used.
func TestCodeLiterals(t *testing.T) {
	src := `package p
func f(err error, e *api.Error) {
	_ = api.Errorf("a_code", "m")
	_ = api.NotFound("b_code", "m")
	_ = api.IsCode(err, "c_code")
	_ = &api.Error{Code: "d_code"}
	_ = e.Code == "e_code"
	_ = "f_code" != e.Code
	_ = ` + "`" + `{"error":{"code":"g_code","message":"m"}}` + "`" + `
	_ = fmt.Sprintf("%s", "not_a_code")
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range codeLiterals(f) {
		got = append(got, l.code)
	}
	slices.Sort(got)
	if want := []string{"a_code", "b_code", "c_code", "d_code", "e_code", "f_code", "g_code"}; !slices.Equal(got, want) {
		t.Fatalf("found %v, want %v", got, want)
	}
}

type codeLit struct {
	code string
	pos  token.Pos
}

// constructors are the api functions whose first argument is a code.
var constructors = []string{"Errorf", "NotFound", "Conflict", "StatusForCode"}

// jsonCode finds codes in hand-written JSON error bodies.
var jsonCode = regexp.MustCompile(`"code"\s*:\s*"([^"]*)"`)

// codeLiterals are the string literals f uses as error codes.
func codeLiterals(f *ast.File) []codeLit {
	var out []codeLit
	add := func(e ast.Expr) {
		if s, ok := stringLit(e); ok && s != "" { // "": no code yet
			out = append(out, codeLit{s, e.Pos()})
		}
	}
	isCodeField := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Code"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) == 0 {
				break
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "api" {
				break
			}
			switch {
			case slices.Contains(constructors, sel.Sel.Name):
				add(n.Args[0])
			case sel.Sel.Name == "IsCode" && len(n.Args) > 1:
				add(n.Args[1])
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
				add(n.Value)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if isCodeField(n.X) {
					add(n.Y)
				} else if isCodeField(n.Y) {
					add(n.X)
				}
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					break
				}
				for _, m := range jsonCode.FindAllStringSubmatch(s, -1) {
					out = append(out, codeLit{m[1], n.Pos()})
				}
			}
		}
		return true
	})
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// moduleGoFiles lists the non-test Go files of every package of the
// module (go list ./... from its root).
func moduleGoFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" && filepath.Dir(l) != here { // the table's own package defines them
			files = append(files, l)
		}
	}
	return files
}
