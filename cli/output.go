package cli

import (
	"io"

	"github.com/scion-go/scion/cli/show"
)

// Output formats (-o): show.ParseFormat reads the flag once, before the
// command runs (a bad expression is a usage error that calls no Hub).
const (
	outputTable = show.KindTable
	outputJSON  = show.KindJSON
)

func (a *app) validateOutput() error {
	f, err := show.ParseFormat(a.output)
	if err != nil {
		return usageErr(err)
	}
	a.format = f
	return nil
}

// json reports whether the command prints data for a script (-o json,
// yaml, jsonpath or go-template) rather than a table; render prints it.
func (a *app) json() bool { return a.format.Structured() }

// wide reports -o wide: the table with more columns.
func (a *app) wide() bool { return a.format.Kind == show.KindWide }

// render prints v in the structured form -o asked for (JSON when the
// command has no table form and -o is table).
func (a *app) render(w io.Writer, v any) error { return a.format.Write(w, v) }
