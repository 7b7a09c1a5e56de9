// Package show renders what the CLI prints for people: aligned tables and
// key-value blocks, ages the way kubectl shows them, JSON for -o json, and
// a move's plan. It holds no state of the CLI's: commands pass it what to
// print and where.
package show

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scion-go/scion/api"
)

// JSON prints v indented. Lists are always printed as a JSON array of
// the API objects (never null), whatever the page structure on the wire,
// since the CLI follows every cursor before printing.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table writes tab-aligned columns; rows are added with Row and the whole
// is written by Flush.
type Table struct{ tw *tabwriter.Writer }

func NewTable(w io.Writer, headers ...string) *Table {
	t := &Table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.Row(headers...)
	return t
}

func (t *Table) Row(cols ...string) {
	for i, c := range cols {
		// A tab or newline inside a value would break the columns.
		cols[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cols, "\t"))
}

func (t *Table) Flush() error { return t.tw.Flush() }

// KeyValues prints aligned "key: value" lines for a single object.
func KeyValues(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], OrDash(kv[i+1]))
	}
	return tw.Flush()
}

// Now is the clock for ages; tests replace it.
var Now = time.Now

// Age renders t relative to now the way kubectl does (45s, 12m, 5h, 3d),
// which is what a table reader wants; -o json keeps the exact time.
func Age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := Now().Sub(t)
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

// Ago is age for sentences ("5m ago"), or "never".
func Ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return Age(*t) + " ago"
}

func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// LimitText shows an effective agent limit; 0 means no limit.
func LimitText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

// MovePlan prints a move's verdict, every check and, for an eligible
// move, its transfer mode and consequences.
func MovePlan(w io.Writer, p *api.MovePlan) {
	verdict := "refused"
	if p.Eligible {
		verdict = "eligible, transfer mode " + p.TransferMode
	}
	fmt.Fprintf(w, "Move of agent %s from %s to %s: %s\n", p.Agent, p.Source, p.Target, verdict)
	t := NewTable(w, "CHECK", "STATUS", "MESSAGE")
	for _, c := range p.Checks {
		t.Row(c.Name, c.Status, c.Message)
	}
	_ = t.Flush()
	if !p.Eligible {
		return
	}
	for _, l := range []struct {
		name  string
		items []string
	}{{"Kept", p.Consequences.Kept}, {"Carried", p.Consequences.Carried},
		{"Recreated", p.Consequences.Recreated}, {"Lost", p.Consequences.Lost}} {
		if len(l.items) > 0 {
			fmt.Fprintf(w, "%s: %s\n", l.name, strings.Join(l.items, "; "))
		}
	}
}
