package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
)

func newProjectCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "project",
		Short: "Manage projects: the units of work agents belong to",
		Long: `A project names a repository (or none) and how agents share its workspace,
which Runtime Brokers provide for it, and the defaults its agents use: the
default broker and the active profile, which also apply to agents started
by other agents.`,
	})
	c.AddCommand(newProjectCreateCmd(a), newProjectListCmd(a), newProjectShowCmd(a),
		newProjectSetCmd(a), newProjectDeleteCmd(a))
	return c
}

// projectFlags are the settable fields shared by create and set.
type projectFlags struct {
	gitRemote, sharingMode, defaultBroker, activeProfile string
}

func (f *projectFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.gitRemote, "git-remote", "", "git remote URL of the project's repository")
	fs.StringVar(&f.sharingMode, "sharing-mode", "", "workspace sharing: "+strings.Join([]string{api.SharingWorktreePerAgent,
		api.SharingSharedWorkspace, api.SharingClonePerAgent, api.SharingEmptyPerAgent}, "|"))
	fs.StringVar(&f.defaultBroker, "default-broker", "", "Runtime Broker (name or ID) for the project's agents")
	fs.StringVar(&f.activeProfile, "active-profile", "", "broker profile for the project's agents")
}

func newProjectCreateCmd(a *app) *cobra.Command {
	var f projectFlags
	c := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a project",
		Example: `  scion project create web --git-remote https://github.com/acme/web.git
  scion project create scratch --sharing-mode empty-per-agent --default-broker my-cloud-vm`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateName("project", args[0]); err != nil {
				return err
			}
			if err := validateInput(api.CheckGitRemote(f.gitRemote)); err != nil {
				return err
			}
			if err := validateProfileFlag("active-profile", f.activeProfile); err != nil {
				return err
			}
			if f.sharingMode != "" {
				if err := validateSharingMode(f.sharingMode); err != nil {
					return err
				}
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			req := api.CreateProjectRequest{Name: args[0], GitRemote: f.gitRemote,
				SharingMode: f.sharingMode, DefaultBroker: f.defaultBroker, ActiveProfile: f.activeProfile}
			if err := validateInput(req.Validate()); err != nil { // the Hub's own check
				return err
			}
			p, err := cl.CreateProject(cmd.Context(), req)
			if err != nil {
				return err
			}
			return a.printProject(cmd, p)
		},
	}
	f.add(c)
	return c
}

func newProjectListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List projects",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			ps, err := cl.ListAllProjects(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), ps)
			}
			t := show.NewTable(cmd.OutOrStdout(), "NAME", "ID", "SHARING", "DEFAULT BROKER", "PROFILE", "PROVIDERS", "AGE")
			for _, p := range ps {
				t.Row(p.Name, p.ID, show.OrDash(p.SharingMode), show.OrDash(p.DefaultBrokerID), show.OrDash(p.ActiveProfile),
					fmt.Sprint(len(p.Providers)), show.Age(p.CreatedAt))
			}
			return t.Flush()
		},
	}
}

func newProjectShowCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "show <name>",
		Short:   "Show a project",
		Example: `  scion project show web -o json`,
		Args:    exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			p, err := cl.GetProject(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printProject(cmd, p)
		},
	}
}

func newProjectSetCmd(a *app) *cobra.Command {
	var f projectFlags
	c := &cobra.Command{
		Use:   "set <name>",
		Short: "Change a project's settings; only the flags given are sent",
		Long: `Change a project's settings. Only the flags given are sent, so the rest stay
as they are; an empty value clears a setting.`,
		Example: `  scion project set web --default-broker my-cloud-vm --active-profile k8s
  scion project set web --default-broker ""`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req api.UpdateProjectRequest
			fs := cmd.Flags()
			if fs.Changed("git-remote") {
				if err := validateInput(api.CheckGitRemote(f.gitRemote)); err != nil {
					return err
				}
				req.GitRemote = &f.gitRemote
			}
			if fs.Changed("sharing-mode") {
				if err := validateSharingMode(f.sharingMode); err != nil {
					return err
				}
				req.SharingMode = &f.sharingMode
			}
			if fs.Changed("default-broker") {
				req.DefaultBroker = &f.defaultBroker
			}
			if fs.Changed("active-profile") {
				if err := validateProfileFlag("active-profile", f.activeProfile); err != nil {
					return err
				}
				req.ActiveProfile = &f.activeProfile
			}
			if req == (api.UpdateProjectRequest{}) {
				return usageErrorf("nothing to set: pass --git-remote, --sharing-mode, --default-broker or --active-profile")
			}
			if err := validateInput(req.Validate()); err != nil { // the Hub's own check
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			p, err := cl.UpdateProject(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return a.printProject(cmd, p)
		},
	}
	f.add(c)
	return c
}

func newProjectDeleteCmd(a *app) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a project (refused while it has agents, unless --force)",
		Long: `Delete a project. It is refused while the project has agents.

The Runtime Brokers that provided for the project remove what their runtime
kept for it beyond its agents (on Kubernetes, the project's shared workspace,
base clone and shared-directory claims). The answer lists what was removed
and what was left, with the reason (a broker offline, say) and how to remove
it by hand.

With --force the project's agents are removed too: each online Runtime
Broker is asked to delete its agents' workloads, on a best-effort basis, and
every agent record goes whatever the broker answers. Nothing is sent for an
agent whose broker is offline or deregistered, or whose placement is
inconsistent (an agent pinned to a flat Runtime Broker whose records no
longer agree): its workload is left running there, listed under "Left", and
has to be removed on that broker by hand. Run it again if it is interrupted:
it continues with the agents still there.`,
		Example: `  scion project delete web
  scion project delete web --force`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			del := cl.DeleteProject
			if force {
				del = cl.ForceDeleteProject
			}
			res, err := del(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), res)
			}
			return printProjectDeleted(cmd.OutOrStdout(), args[0], res)
		},
	}
	c.Flags().BoolVar(&force, "force", false, "also remove the project's agents, with best-effort deletes of their workloads")
	return c
}

func (a *app) printProject(cmd *cobra.Command, p *api.Project) error {
	if a.json() {
		return a.render(cmd.OutOrStdout(), p)
	}
	return show.KeyValues(cmd.OutOrStdout(),
		"Name", p.Name,
		"ID", p.ID,
		"Git remote", p.GitRemote,
		"Sharing mode", p.SharingMode,
		"Default broker", p.DefaultBrokerID,
		"Active profile", p.ActiveProfile,
		"Providers", strings.Join(p.Providers, ", "),
		"Created", show.Age(p.CreatedAt)+" ago")
}

// printProjectDeleted says that the project is gone, what its brokers
// removed for it and what was left (and why).
func printProjectDeleted(w io.Writer, name string, res *api.ProjectDeleted) error {
	fmt.Fprintf(w, "Deleted project %s.\n", name)
	for _, r := range res.Removed {
		fmt.Fprintf(w, "Removed on runtime broker %s: %s\n", show.OrDash(r.Broker), r.Resource)
	}
	for _, r := range res.Queued {
		fmt.Fprintf(w, "Queued on runtime broker %s: %s\n", show.OrDash(firstNonEmpty(r.Broker, r.BrokerID)), r.Reason)
	}
	for _, r := range res.Left {
		what := "project resources"
		if r.Resource != "" {
			what = r.Resource
		}
		fmt.Fprintf(w, "Left on runtime broker %s: %s: %s\n", show.OrDash(firstNonEmpty(r.Broker, r.BrokerID)), what, r.Reason)
	}
	return nil
}
