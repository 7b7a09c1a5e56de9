package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

func newListCmd(a *app) *cobra.Command {
	var project, broker string
	var all, watchFlag bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List agents of a project, or of all projects",
		Example: `  scion list
  scion list --project web --broker my-cloud-vm
  scion list --all -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "project", "broker"); err != nil {
				return err
			}
			if all && project != "" {
				return usageErrorf("--all and --project exclude each other")
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			filter := client.AgentFilter{Broker: broker}
			if !all {
				filter.Project = projectOrDefault(project)
			}
			var f *feed
			if watchFlag {
				if f, err = openFeed(cmd, cl); err != nil {
					return err
				}
			}
			ags, err := cl.ListAllAgents(cmd.Context(), filter)
			if err != nil {
				return err
			}
			if f != nil {
				return a.listAndWatch(cmd, cl, f, ags, filter, all)
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), ags)
			}
			names := map[string]string{}
			if all && len(ags) > 0 {
				names = projectNames(cmd.Context(), cl)
			}
			t, row := a.agentTable(cmd.OutOrStdout())
			for _, ag := range ags {
				p := filter.Project
				if all {
					p = firstNonEmpty(names[ag.ProjectID], ag.ProjectID)
				}
				t.Row(row(ag, p)...)
			}
			return t.Flush()
		},
	}
	c.Flags().BoolVarP(&watchFlag, "watch", "w", false, watchHelp)
	projectFlag(c, &project)
	c.Flags().StringVar(&broker, "broker", "", "only agents on this Runtime Broker (name or ID)")
	c.Flags().BoolVar(&all, "all", false, "agents of every project")
	return c
}

// projectNames maps project IDs to names for the table. It is best effort:
// without it the table shows IDs, which is still correct.
func projectNames(ctx context.Context, cl *client.Client) map[string]string {
	m := map[string]string{}
	ps, err := cl.ListAllProjects(ctx)
	if err != nil {
		return m
	}
	for _, p := range ps {
		m[p.ID] = p.Name
	}
	return m
}

func newLogsCmd(a *app) *cobra.Command {
	var project string
	var follow bool
	var tail int
	c := &cobra.Command{
		Use:   "logs <name>",
		Short: "Print an agent's output",
		Long: `Print an agent's output (its main process's stdout and stderr, as its runtime
keeps them). -f follows new output until Ctrl-C or the agent's end.

-o json prints {"agent", "project", "lines": [...]}; with -f, one JSON
object per line as it comes: {"agent", "project", "line"} (NDJSON).`,
		Example: `  scion logs fixer
  scion logs fixer -f --tail 100`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "project"); err != nil {
				return err
			}
			if tail < 0 {
				return usageErrorf("invalid --tail %d: must be 0 (everything) or more", tail)
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			rc, err := cl.Logs(cmd.Context(), args[0], projectOrDefault(project), follow, tail)
			if err != nil {
				return err
			}
			defer rc.Close()
			if a.json() {
				err = logLinesJSON(cmd.OutOrStdout(), rc, args[0], projectOrDefault(project), follow)
			} else {
				_, err = io.Copy(cmd.OutOrStdout(), rc)
			}
			// Ctrl-C is how a follow ends; it is not an error.
			if err != nil && follow && errors.Is(cmd.Context().Err(), context.Canceled) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading logs: %w", err)
			}
			return nil
		},
	}
	projectFlag(c, &project)
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming new output")
	c.Flags().IntVar(&tail, "tail", 0, "start with the last N lines (0: everything)")
	return c
}

// listAndWatch prints the list, then each change of its agents (its
// project, or every project with --all; its broker with --broker).
func (a *app) listAndWatch(cmd *cobra.Command, cl *client.Client, f *feed, ags []api.Agent, filter client.AgentFilter, all bool) error {
	names := projectNames(cmd.Context(), cl)
	projectID := ""
	if !all {
		p, err := cl.GetProject(cmd.Context(), filter.Project)
		if err != nil {
			f.stop()
			return err
		}
		projectID = p.ID
	}
	header := agentHeaders
	rowOf := agentRow
	if a.wide() {
		header, rowOf = agentWideHeaders, agentWideRow
	}
	row := func(ag api.Agent) []string {
		return rowOf(ag, firstNonEmpty(names[ag.ProjectID], ag.ProjectID))
	}
	keep := func(ag api.Agent) bool {
		return (projectID == "" || ag.ProjectID == projectID) &&
			(filter.Broker == "" || ag.BrokerID == filter.Broker || ag.BrokerName == filter.Broker)
	}
	out := cmd.OutOrStdout()
	if a.json() {
		for _, ag := range ags {
			if err := a.renderLine(out, ag); err != nil {
				return err
			}
		}
	} else {
		rows := make([][]string, len(ags))
		for i, ag := range ags {
			rows[i] = row(ag)
		}
		wr := newWatchRows(out, header, rows)
		wr.print(header)
		for _, r := range rows {
			wr.print(r)
		}
	}
	relist := func() ([]api.Agent, error) { return cl.ListAllAgents(cmd.Context(), filter) }
	return a.watchAgents(cmd, f, ags, relist, keep, row, header)
}
