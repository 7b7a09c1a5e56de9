package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlansArePure keeps the package what its doc says: what it may
// import (no I/O, none of the Hub) is internal/deptest's rule; this test
// adds what an import list cannot tell: no function here reads the clock,
// makes IDs, or names the store interface or a context.
func TestPlansArePure(t *testing.T) {
	forbidden := map[string]string{"time.Now": "the time is an input", "time.Since": "the time is an input",
		"store.Store": "plans read no store", "uuid": "IDs are inputs", "context": "plans do no I/O"}
	files, err := filepath.Glob("*.go")
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
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					sel := id.Name + "." + x.Sel.Name
					if why, bad := forbidden[sel]; bad {
						t.Errorf("%s: %s (%s)", fset.Position(x.Pos()), sel, why)
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
