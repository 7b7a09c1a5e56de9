package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Output formats (-o).
const (
	outputTable = "table"
	outputJSON  = "json"
)

func (a *app) validateOutput() error {
	switch a.output {
	case outputTable, outputJSON:
		return nil
	}
	return usageErrorf("invalid --output %q: use table or json", a.output)
}

func (a *app) json() bool { return a.output == outputJSON }

// writeJSON prints v indented. Lists are always printed as a JSON array of
// the API objects (never null), whatever the page structure on the wire,
// since the CLI follows every cursor before printing.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes tab-aligned columns; rows are added with row and the whole
// is written by flush.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, headers ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(headers...)
	return t
}

func (t *table) row(cols ...string) {
	for i, c := range cols {
		// A tab or newline inside a value would break the columns.
		cols[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cols, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// keyValues prints aligned "key: value" lines for a single object.
func keyValues(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], orDash(kv[i+1]))
	}
	return tw.Flush()
}

// now is the clock for ages; tests replace it.
var now = time.Now

// age renders t relative to now the way kubectl does (45s, 12m, 5h, 3d),
// which is what a table reader wants; -o json keeps the exact time.
func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now().Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// ago is age for sentences ("5m ago"), or "never".
func ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return age(*t) + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// limitText shows an effective agent limit; 0 means no limit.
func limitText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
