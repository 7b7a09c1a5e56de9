package show

import (
	"bytes"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestFormatsPrintTheAPISpelling(t *testing.T) {
	ags := []api.Agent{
		{ID: "01a", Slug: "fixer", Phase: api.PhaseRunning, Generation: 3, StatusMessage: "ok"},
		{ID: "01b", Slug: "writer", Phase: api.PhaseStopped, Generation: 1},
	}
	for _, tc := range []struct{ out, want string }{
		{"jsonpath={[*].slug}", "fixer writer\n"},
		{`jsonpath={range [*]}{.slug}={.phase}{"\n"}{end}`, "fixer=running\nwriter=stopped\n"},
		{`go-template={{range .}}{{.slug}} {{.generation}}{{"\n"}}{{end}}`, "fixer 3\nwriter 1\n"},
		{`template={{(index . 0).statusMessage}}`, "ok\n"},
	} {
		f, err := ParseFormat(tc.out)
		if err != nil {
			t.Fatalf("%s: %v", tc.out, err)
		}
		var b bytes.Buffer
		if err := f.Write(&b, ags); err != nil {
			t.Fatalf("%s: %v", tc.out, err)
		}
		if b.String() != tc.want {
			t.Errorf("-o %s printed %q, want %q", tc.out, b.String(), tc.want)
		}
	}

	f, _ := ParseFormat("yaml")
	var b bytes.Buffer
	if err := f.Write(&b, ags[0]); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"slug: fixer\n", "generation: 3\n", "phase: running\n", "statusMessage: ok\n"} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("-o yaml lacks %q:\n%s", want, b.String())
		}
	}
	if !f.Structured() {
		t.Error("yaml is not structured")
	}
	for _, k := range []string{"table", "wide"} {
		if f, _ := ParseFormat(k); f.Structured() {
			t.Errorf("%s is structured", k)
		}
	}
}

func TestFormatErrorsAtRunTimeAreErrors(t *testing.T) {
	f, err := ParseFormat("go-template={{.nosuch}}")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(&bytes.Buffer{}, map[string]string{"slug": "x"}); err == nil {
		t.Fatal("a template naming a missing key printed")
	}
	f, _ = ParseFormat("jsonpath={.nosuch}")
	if err := f.Write(&bytes.Buffer{}, map[string]string{"slug": "x"}); err == nil {
		t.Fatal("a jsonpath naming a missing key printed")
	}
}
