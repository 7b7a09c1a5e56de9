package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// -w/--watch: after the list, a line for every change as the Hub's live
// feed (GET /api/v1/events) tells it, until Ctrl-C. The feed is read as
// the caller: it carries exactly what the caller's own reads would.
// Under a structured -o each change is one document (NDJSON for json).

const watchHelp = "after the list, print each change as it happens (the Hub's live feed) until Ctrl-C"

// watchRows prints table rows under the list's header, padded to the
// widths the list used (a later, wider cell widens its column).
type watchRows struct {
	w      io.Writer
	widths []int
}

func newWatchRows(w io.Writer, header []string, rows [][]string) *watchRows {
	wr := &watchRows{w: w, widths: make([]int, len(header))}
	for _, r := range append([][]string{header}, rows...) {
		wr.fit(r)
	}
	return wr
}

func (wr *watchRows) fit(r []string) {
	for i, c := range r {
		if i < len(wr.widths) && utf8.RuneCountInString(c) > wr.widths[i] {
			wr.widths[i] = utf8.RuneCountInString(c)
		}
	}
}

// print writes r; the first call writes the header too when there were
// no rows to set it.
func (wr *watchRows) print(r []string) {
	wr.fit(r)
	var b strings.Builder
	for i, c := range r {
		b.WriteString(c)
		if i < len(r)-1 {
			b.WriteString(strings.Repeat(" ", wr.widths[i]-utf8.RuneCountInString(c)+2))
		}
	}
	fmt.Fprintln(wr.w, b.String())
}

// feed is the live feed of a watch, opened before the list is read so
// that no change between the two is missed (one seen twice is printed
// twice, which is harmless).
type feed struct {
	ctx  context.Context
	stop func()
	st   *client.EventStream
}

// openFeed opens the feed; Ctrl-C ends it.
func openFeed(cmd *cobra.Command, cl *client.Client) (*feed, error) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	st, err := cl.Events(ctx)
	if err != nil {
		stop()
		return nil, err
	}
	return &feed{ctx: ctx, stop: stop, st: st}, nil
}

// watch hands each event of f to on until Ctrl-C (nil) or the feed's end.
func (f *feed) watch(on func(client.Event) error) error {
	defer f.stop()
	defer f.st.Close()
	ctx, st := f.ctx, f.st
	for {
		ev, err := st.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) {
				return errors.New("the Hub ended the live feed")
			}
			return err
		}
		if err := on(ev); err != nil {
			return err
		}
	}
}

// watchAgents follows the agents the list showed (keep says which are
// the list's: its project, its broker) after the list was printed.
func (a *app) watchAgents(cmd *cobra.Command, f *feed, ags []api.Agent, relist func() ([]api.Agent, error), keep func(api.Agent) bool, row func(api.Agent) []string, header []string) error {
	known := map[string]api.Agent{}
	var rows [][]string
	for _, ag := range ags {
		known[ag.ID] = ag
		rows = append(rows, row(ag))
	}
	out := cmd.OutOrStdout()
	wr := newWatchRows(out, header, rows)
	emit := func(ag api.Agent) error {
		if a.json() {
			return a.renderLine(out, ag)
		}
		wr.print(row(ag))
		return nil
	}
	return f.watch(func(ev client.Event) error {
		switch ev.Name {
		case client.EventAgent:
			var ag api.Agent
			if json.Unmarshal(ev.Data, &ag) != nil || !keep(ag) {
				return nil
			}
			known[ag.ID] = ag
			return emit(ag)
		case client.EventAgentGone:
			var g client.AgentGone
			if json.Unmarshal(ev.Data, &g) != nil {
				return nil
			}
			ag, ok := known[g.ID]
			if !ok {
				return nil
			}
			delete(known, g.ID)
			ag.Phase, ag.ContainerStatus = "deleted", ""
			return emit(ag)
		case client.EventAgents, client.EventResync:
			// The list again (the feed's snapshot, or many changed at
			// once): each agent that changed is printed.
			var fresh []api.Agent
			if ev.Name == client.EventAgents {
				if json.Unmarshal(ev.Data, &fresh) != nil {
					return nil
				}
			} else {
				var err error
				if fresh, err = relist(); err != nil {
					return err
				}
			}
			for _, ag := range fresh {
				if keep(ag) {
					if old, ok := known[ag.ID]; !ok || old.Phase != ag.Phase || old.StatusMessage != ag.StatusMessage {
						known[ag.ID] = ag
						if err := emit(ag); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	})
}

// renderLine prints v as one document of a watch: a JSON line under -o
// json (NDJSON), else the -o form followed by its separator.
func (a *app) renderLine(w io.Writer, v any) error {
	if a.format.Kind == outputJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if a.format.Kind == "yaml" {
		fmt.Fprintln(w, "---")
	}
	return a.render(w, v)
}
