package hub

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPlansArePure keeps the plan files (plan*.go) pure, as plan.go says:
// they import no I/O, no function there has a *Server, and none reads the
// clock, makes IDs or names the Store or a context. (What they call in
// the rest of the package, validateCreate or quotaError, is pure too, but
// that is for review to keep.)
func TestPlansArePure(t *testing.T) {
	allowed := map[string]bool{"cmp": true, "errors": true, "fmt": true, "net/http": true, "slices": true, "strings": true, "time": true,
		"github.com/scion-go/scion/api": true, "github.com/scion-go/scion/hub/authz": true, "github.com/scion-go/scion/hub/lifecycle": true,
		"github.com/scion-go/scion/hub/placement": true, "github.com/scion-go/scion/store": true,
		"github.com/scion-go/scion/wire": true}
	forbidden := map[string]string{"time.Now": "the time is an input", "time.Since": "the time is an input",
		"store.Store": "plans read no store", "mustV7": "IDs are inputs", "uuid": "IDs are inputs", "context": "plans do no I/O"}
	files, err := filepath.Glob("plan*.go")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		n++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); !allowed[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.FuncDecl:
				if x.Recv != nil {
					if star, ok := x.Recv.List[0].Type.(*ast.StarExpr); ok {
						if id, ok := star.X.(*ast.Ident); ok && id.Name == "Server" {
							t.Errorf("%s: %s has a *Server", fset.Position(x.Pos()), x.Name.Name)
						}
					}
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					sel := id.Name + "." + x.Sel.Name
					if why, bad := forbidden[sel]; bad {
						t.Errorf("%s: %s (%s)", fset.Position(x.Pos()), sel, why)
					}
					if id.Name == "http" && !strings.HasPrefix(x.Sel.Name, "Status") {
						t.Errorf("%s: %s (plans use net/http for status codes only)", fset.Position(x.Pos()), sel)
					}
				}
			case *ast.Ident:
				if why, bad := forbidden[x.Name]; bad {
					t.Errorf("%s: %s (%s)", fset.Position(x.Pos()), x.Name, why)
				}
			}
			return true
		})
	}
	if n < 4 {
		t.Fatalf("found %d plan files, want plan.go, plan_create.go, plan_action.go, plan_reconcile.go", n)
	}
}
