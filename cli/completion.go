package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/config"
)

// Shell completion: 'scion completion bash|zsh|fish|powershell' prints
// the script (cobra's); names of agents, projects, brokers and hubs are
// completed from the live Hub (and the hub list) through cobra's hidden
// __complete command. A Hub that cannot be reached completes nothing: a
// completion never prints an error into the user's command line.

// completeTimeout bounds one completion's call to the Hub: a shell waits
// on it.
const completeTimeout = 3 * time.Second

type completer func(cmd *cobra.Command, toComplete string) []cobra.Completion

// completeArgs completes every positional argument of c with f.
func completeArgs(c *cobra.Command, f completer) {
	c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeFlag completes flag of c with f.
func completeFlag(c *cobra.Command, flag string, f completer) {
	_ = c.RegisterFlagCompletionFunc(flag, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// withHub runs f against the selected Hub within completeTimeout; nil
// when there is none or it fails.
func (a *app) withHub(cmd *cobra.Command, f func(context.Context, *client.Client) ([]cobra.Completion, error)) []cobra.Completion {
	a.completing = true
	_, cl, err := a.connect()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
	defer cancel()
	out, err := f(ctx, cl)
	if err != nil {
		return nil
	}
	return out
}

func (a *app) completeAgents(cmd *cobra.Command, toComplete string) []cobra.Completion {
	project, _ := cmd.Flags().GetString("project")
	return a.withHub(cmd, func(ctx context.Context, cl *client.Client) ([]cobra.Completion, error) {
		ags, err := cl.ListAllAgents(ctx, client.AgentFilter{Project: projectOrDefault(project)})
		var out []cobra.Completion
		for _, ag := range ags {
			if strings.HasPrefix(ag.Slug, toComplete) {
				out = append(out, cobra.CompletionWithDesc(ag.Slug, ag.Phase))
			}
		}
		return out, err
	})
}

func (a *app) completeProjects(cmd *cobra.Command, toComplete string) []cobra.Completion {
	return a.withHub(cmd, func(ctx context.Context, cl *client.Client) ([]cobra.Completion, error) {
		ps, err := cl.ListAllProjects(ctx)
		var out []cobra.Completion
		for _, p := range ps {
			if strings.HasPrefix(p.Name, toComplete) {
				out = append(out, p.Name)
			}
		}
		return out, err
	})
}

func (a *app) completeBrokers(cmd *cobra.Command, toComplete string) []cobra.Completion {
	return a.withHub(cmd, func(ctx context.Context, cl *client.Client) ([]cobra.Completion, error) {
		bs, err := cl.ListAllBrokers(ctx)
		var out []cobra.Completion
		for _, b := range bs {
			if strings.HasPrefix(b.Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(b.Name, b.Status))
			}
		}
		return out, err
	})
}

// completeHubs completes hub list nicknames (a local file: no Hub call).
func (a *app) completeHubs(_ *cobra.Command, toComplete string) []cobra.Completion {
	l, err := config.LoadHubList()
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, n := range l.Names() {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, cobra.CompletionWithDesc(n, l.Hubs[n].URL))
		}
	}
	return out
}

// addCompletions wires the completers into the tree: positional names
// by command, and --project, --broker and --hub wherever they are.
func (a *app) addCompletions(root *cobra.Command) {
	completeFlag(root, "hub", a.completeHubs)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("project") != nil {
			completeFlag(c, "project", a.completeProjects)
		}
		if c.Flags().Lookup("broker") != nil {
			completeFlag(c, "broker", a.completeBrokers)
		}
		if c.ValidArgsFunction == nil {
			switch c.CommandPath() {
			case "scion logs", "scion attach", "scion exec", "scion reincarnate":
				completeArgs(c, a.completeAgents)
			case "scion project show", "scion project set", "scion project delete":
				completeArgs(c, a.completeProjects)
			case "scion hub use":
				completeArgs(c, a.completeHubs)
			case "scion hub brokers set":
				completeArgs(c, a.completeBrokers)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
