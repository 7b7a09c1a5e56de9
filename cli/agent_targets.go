package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
)

// namesOrAll accepts one or more non-empty names, or none with --all.
func namesOrAll(all *bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case *all && len(args) > 0:
			return usageErrorf("%s: give agent names or --all, not both", cmd.CommandPath())
		case !*all && len(args) == 0:
			return usageErrorf("%s takes one or more agent names, or --all", cmd.CommandPath())
		}
		for _, a := range args {
			if a == "" {
				return usageErrorf("an agent name must not be empty")
			}
		}
		return nil
	}
}

// targetNames is the agents a command acts on: args, or with --all every
// agent of project (their names read once, before acting on any).
func targetNames(cmd *cobra.Command, cl *client.Client, args []string, all bool, project string) ([]string, error) {
	if !all {
		return dedupe(args), nil
	}
	ags, err := cl.ListAllAgents(cmd.Context(), client.AgentFilter{Project: project})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ags))
	for i, ag := range ags {
		names[i] = ag.Slug
	}
	return names, nil
}

func dedupe(names []string) []string {
	seen := map[string]bool{}
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// eachName runs do for every name, one after another: a failure is
// reported on stderr (the name, then the error as reportError would say
// it) and the rest still run. The error returned names the failed ones
// and exits 1; nil when all went through.
func eachName(cmd *cobra.Command, names []string, do func(string) error) error {
	var failed []string
	for _, n := range names {
		if err := cmd.Context().Err(); err != nil {
			return err
		}
		if err := do(n); err != nil {
			failed = append(failed, n)
			if structuredOutput(cmd) {
				_ = show.JSON(redactingWriter{cmd.ErrOrStderr()}, map[string]any{"name": n, "error": errorJSON(err)})
				continue
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: ", n)
			reportError(cmd.ErrOrStderr(), cmd, err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d failed: %s", len(failed), len(names), strings.Join(failed, ", "))
	}
	return nil
}

// nonNil is s, or an empty slice: -o json prints [] for none, never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
