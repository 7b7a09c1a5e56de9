package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
)

func projectOrDefault(p string) string {
	if p != "" {
		return p
	}
	if p = os.Getenv(api.EnvProject); p != "" {
		return p
	}
	return api.GlobalProject
}

// newAgentCmds returns the top-level agent commands (scion create, start, ...).
func newAgentCmds(a *app) []*cobra.Command {
	cmds := []*cobra.Command{newCreateCmd(a, false), newCreateCmd(a, true)}
	for _, act := range []struct{ name, short string }{
		{client.ActionStop, "Stop a running agent (frees its slot on the broker)"},
		{client.ActionRestart, "Restart an agent's container"},
		{client.ActionSuspend, "Suspend an agent, keeping its state"},
		{client.ActionResume, "Resume a suspended agent"},
	} {
		cmds = append(cmds, newActionCmd(a, act.name, act.short))
	}
	return append(cmds, newDeleteCmd(a), newListCmd(a), newLogsCmd(a), newExecCmd(a), newAttachCmd(a), newReincarnateCmd(a))
}

// createFlags are the flags of create and start.
type createFlags struct {
	project, broker, profile, harness, image string
	env                                      []string
	ports                                    []int
	role, passthrough                        string
	scopes, secrets, k8s                     []string
	noScopes                                 bool
}

func (f *createFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	projectFlag(cmd, &f.project)
	fs.StringVar(&f.broker, "broker", "", "Runtime Broker (name or ID); default: the Hub's broker selection")
	fs.StringVarP(&f.profile, "profile", "p", "", "broker profile; default: the project's active profile, else the broker's default")
	fs.StringVar(&f.harness, "harness", "", `harness to run (default: the Hub's default, "generic")`)
	fs.StringVar(&f.image, "image", "", "container image")
	fs.StringArrayVar(&f.env, "env", nil, "environment variable KEY=VALUE (repeatable)")
	fs.IntSliceVar(&f.ports, "port", nil, "container port to publish on a host port from the broker's port pool (repeatable)")
	fs.StringVar(&f.role, "role", "", "agent role: worker (default) or coordinator (acts on every agent of the project; needs a hub admin)")
	fs.StringArrayVar(&f.scopes, "scope", nil, "scope of the agent's token (repeatable; default: project:agent:create, or the creating agent's)")
	fs.BoolVar(&f.noScopes, "no-scopes", false, "give the agent's token no scopes (it cannot start agents)")
	fs.StringVar(&f.passthrough, "passthrough", "", `run the agent with your cloud identity ("gcp"); the broker must allow it`)
	fs.StringArrayVar(&f.secrets, "secret", nil, "Hub secret to put in the agent's environment under its name (repeatable)")
	fs.StringArrayVar(&f.k8s, "k8s", nil, "the agent's own Kubernetes setting KEY=VALUE, winning over its profile's (namespace, shared_dir_size, ...; repeatable)")
}

// identity fills the identity fields of a create request.
func (f *createFlags) identity(req *api.CreateAgentRequest) error {
	if f.noScopes && len(f.scopes) > 0 {
		return usageErrorf("--no-scopes and --scope exclude each other")
	}
	req.Role, req.Passthrough, req.Secrets = f.role, f.passthrough, f.secrets
	for _, kv := range f.k8s {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf("invalid --k8s %q: use KEY=VALUE, as in --k8s namespace=agents", kv)
		}
		if req.Kubernetes == nil {
			req.Kubernetes = map[string]string{}
		}
		req.Kubernetes[k] = v
	}
	switch {
	case f.noScopes:
		req.Scopes = &[]string{}
	case len(f.scopes) > 0:
		req.Scopes = &f.scopes
	}
	return nil
}

// nameAndCommand splits `<name> [-- command args...]`.
func nameAndCommand(cmd *cobra.Command, args []string) (string, []string, error) {
	dash := cmd.ArgsLenAtDash()
	before := args
	var command []string
	if dash >= 0 {
		before, command = args[:dash], args[dash:]
	}
	switch {
	case len(before) == 0:
		return "", nil, usageErrorf("%s needs the agent's name", cmd.CommandPath())
	case len(before) > 1:
		return "", nil, usageErrorf("unexpected argument %q: put the agent's command after --, as in: %s %s -- %s",
			before[1], cmd.CommandPath(), before[0], strings.Join(before[1:], " "))
	}
	if err := validateName("agent", before[0]); err != nil {
		return "", nil, err
	}
	return before[0], command, nil
}

func newCreateCmd(a *app, start bool) *cobra.Command {
	var f createFlags
	c := &cobra.Command{
		Use:   "create <name> [flags] [-- command args...]",
		Short: "Create (provision) an agent without starting it",
		Long: `Create an agent in a project and provision it on a Runtime Broker without
starting it. The Hub picks the broker: --broker, else the project's default
broker, else the hub-wide default, else the only online provider. The
profile is -p, else the project's active profile, else the broker's default.
Inside an agent container the Hub comes from SCION_HUB_ENDPOINT; the calling
agent's broker and profile are not inherited.`,
		Example: `  scion create fixer --project web -- claude -p "fix the flaky test"
  scion create batch --broker my-cloud-vm -p k8s --env MODE=fast
  scion create web --port 8080 --port 9090 -- ./serve`,
	}
	if start {
		c.Use = "start <name> [flags] [-- command args...]"
		c.Short = "Start an agent, creating it first if it does not exist"
		c.Long = `Start an agent. If it exists in the project it is started (the creation
flags are then ignored); otherwise it is created and started in one step,
with the same broker and profile selection as 'scion create'.

An agent whose create its broker refused (phase error, no container) is
created again when creation flags or a command are given: the retry runs
with them, on the failed create's broker and profile unless --broker or -p
say otherwise. An agent whose container existed is never replaced by a
start: delete it first to run it with another command.`
		c.Example = `  scion start fixer -- claude
  scion start fixer --broker my-cloud-vm`
	}
	c.Args = func(cmd *cobra.Command, args []string) error { _, _, err := nameAndCommand(cmd, args); return err }
	c.RunE = func(cmd *cobra.Command, args []string) error {
		name, command, _ := nameAndCommand(cmd, args)
		if err := nonEmptyFlag(cmd, "project", "broker", "profile", "harness", "image"); err != nil {
			return err
		}
		env, err := parseEnv(f.env)
		if err != nil {
			return err
		}
		if err := checkPorts(f.ports); err != nil {
			return err
		}
		if err := validateProfileFlag("profile", f.profile); err != nil {
			return err
		}
		if err := validateHarnessFlag("harness", f.harness); err != nil {
			return err
		}
		project := projectOrDefault(f.project)
		_, cl, err := a.connect()
		if err != nil {
			return err
		}
		req := api.CreateAgentRequest{Name: name, Project: project, Broker: f.broker, Profile: f.profile,
			Harness: f.harness, Image: f.image, Command: command, Env: env, Ports: f.ports, Start: start}
		if err := f.identity(&req); err != nil {
			return err
		}
		var ag *api.Agent
		if start {
			ag, err = startOrCreate(cmd, cl, req)
		} else {
			ag, err = createKeyed(cmd, cl, req)
		}
		if err != nil {
			return err
		}
		return a.printAgent(cmd, ag, project)
	}
	f.add(c)
	return c
}

// startOrCreate starts the agent if the project has it, and otherwise
// creates it with start=true. An agent whose create the broker refused
// (phase error, no container: see retryRefusedCreate) is created again
// with this request when it carries creation flags or a command: that is
// how a user retries a create. Any other existing agent is started as it
// is, its creation flags ignored with a warning that says how to replace
// it.
func startOrCreate(cmd *cobra.Command, cl *client.Client, req api.CreateAgentRequest) (*api.Agent, error) {
	ctx := cmd.Context()
	cur, err := cl.GetAgent(ctx, req.Name, req.Project)
	if isAgentNotFound(err) {
		ag, err := createKeyed(cmd, cl, req)
		if !api.IsCode(err, api.CodeAlreadyExists) {
			return ag, err
		}
		// Someone created it between our look-up and our create: start it.
	} else if err != nil {
		return nil, err
	}
	ignored := ignoredCreateFlags(cmd, req)
	if cur != nil && len(ignored) > 0 && retryRefusedCreate(*cur) {
		ag, err := createKeyed(cmd, cl, retryRequest(req, *cur))
		if !api.IsCode(err, api.CodeAlreadyExists) {
			return ag, err
		}
		// The Hub did not let this caller replace it (or it is being
		// created right now): start it as it is, as below.
	}
	if len(ignored) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: agent %s already exists; ignoring %s (to run it with them, replace it: scion delete %s, then scion start %s again)\n",
			req.Name, strings.Join(ignored, ", "), req.Name, req.Name)
	}
	return actionKeyed(cmd, cl, req.Name, req.Project, client.ActionStart)
}

// retryRefusedCreate reports whether agent a is what a create the broker
// refused leaves: phase error and no container ever made (its container
// status empty or missing). The Hub lets a create with its name replace
// exactly such an agent; one whose container existed is never replaced
// by a start.
func retryRefusedCreate(a api.Agent) bool {
	return a.Phase == api.PhaseError && (a.ContainerStatus == "" || a.ContainerStatus == api.ContainerMissing)
}

// retryRequest is req for the retry of failed's create: what the user
// typed now, on the broker and profile the failed create had when req
// names none (a retry goes where the first try went, not wherever the
// Hub's selection would put a new agent).
func retryRequest(req api.CreateAgentRequest, failed api.Agent) api.CreateAgentRequest {
	if req.Broker == "" {
		req.Broker = failed.BrokerID
	}
	if req.Profile == "" && req.Broker == failed.BrokerID {
		req.Profile = failed.Profile
	}
	return req
}

func ignoredCreateFlags(cmd *cobra.Command, req api.CreateAgentRequest) []string {
	var out []string
	for _, n := range []string{"broker", "profile", "harness", "image", "env", "port"} {
		if cmd.Flags().Changed(n) {
			out = append(out, "--"+n)
		}
	}
	if len(req.Command) > 0 {
		out = append(out, "the command")
	}
	return out
}

// isAgentNotFound is true for "no such agent" but not for "no such
// project", which creating the agent would not fix.
func isAgentNotFound(err error) bool {
	return api.IsCode(err, api.CodeAgentNotFound) || api.IsCode(err, api.CodeNotFound)
}

func newActionCmd(a *app, action, short string) *cobra.Command {
	var project string
	var all bool
	c := &cobra.Command{
		Use:   action + " <name>... | --all",
		Short: short,
		Example: fmt.Sprintf(`  scion %s fixer --project web
  scion %s fixer writer
  scion %s --all --project web`, action, action, action),
		Args: namesOrAll(&all),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "project"); err != nil {
				return err
			}
			p := projectOrDefault(project)
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			names, err := targetNames(cmd, cl, args, all, p)
			if err != nil {
				return err
			}
			if len(names) == 1 && !all {
				ag, err := actionKeyed(cmd, cl, names[0], p, action)
				if err != nil {
					return err
				}
				a.noteQueued(cmd, ag)
				return a.printAgent(cmd, ag, p)
			}
			var done []api.Agent
			failed := eachName(cmd, names, func(name string) error {
				ag, err := actionKeyed(cmd, cl, name, p, action)
				if err == nil {
					a.noteQueued(cmd, ag)
					done = append(done, *ag)
				}
				return err
			})
			if a.json() && (failed == nil || len(done) > 0) {
				if err := a.render(cmd.OutOrStdout(), nonNil(done)); err != nil {
					return err
				}
			} else if !a.json() && len(done) > 0 {
				t, row := a.agentTable(cmd.OutOrStdout())
				for _, ag := range done {
					t.Row(row(ag, p)...)
				}
				if err := t.Flush(); err != nil {
					return err
				}
			}
			return failed
		},
	}
	projectFlag(c, &project)
	c.Flags().BoolVar(&all, "all", false, "every agent of the project (--project)")
	completeArgs(c, a.completeAgents)
	return c
}

// noteQueued says on stderr that an action waits for its broker.
func (a *app) noteQueued(cmd *cobra.Command, ag *api.Agent) {
	if ag.QueuedDispatch != nil && !a.json() {
		fmt.Fprintf(cmd.ErrOrStderr(), "The runtime broker of %s is offline: the %s is queued and delivered when it reconnects.\n", ag.Slug, ag.QueuedDispatch.Action)
	}
}

// deletedView is one deleted agent in delete's -o json.
type deletedView struct {
	Name    string `json:"name"`
	Project string `json:"project"`
	Deleted bool   `json:"deleted"`
}

func newDeleteCmd(a *app) *cobra.Command {
	var project string
	var force, all bool
	c := &cobra.Command{
		Use:   "delete <name>... | --all",
		Short: "Delete agents and their containers",
		Long: `Delete agents: each one's broker removes its container, then the Hub its
record. Several names are deleted one after another; one that fails is
reported and the others are still deleted (exit 1). --all deletes every
agent of the project.

With --force the record of an agent whose runtime broker was deregistered
(runtime_broker_missing) is removed too; nothing can reach that broker, so
a workload still running there is left alone. An agent pinned to a flat
Runtime Broker whose placement is inconsistent (runtime_target_pin_stale,
runtime_target_mismatch, or its pinned broker deregistered) is refused with
or without --force: its record stays until its project is deleted with
'scion project delete --force'.

-o json prints [{"name", "project", "deleted"}] for the agents deleted.`,
		Example: `  scion delete fixer --project web
  scion delete fixer writer
  scion delete --all --project scratch
  scion delete fixer --force`,
		Args: namesOrAll(&all),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "project"); err != nil {
				return err
			}
			p := projectOrDefault(project)
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			del := cl.DeleteAgent
			if force {
				del = cl.ForceDeleteAgent
			}
			names, err := targetNames(cmd, cl, args, all, p)
			if err != nil {
				return err
			}
			var done []deletedView
			deleteOne := func(name string) error {
				if err := del(cmd.Context(), name, p); err != nil {
					return err
				}
				done = append(done, deletedView{Name: name, Project: p, Deleted: true})
				if !a.json() {
					fmt.Fprintf(cmd.OutOrStdout(), "Deleted agent %s (project %s).\n", name, p)
				}
				return nil
			}
			var failed error
			if len(names) == 1 && !all {
				failed = deleteOne(names[0]) // its error is the command's
			} else {
				failed = eachName(cmd, names, deleteOne)
			}
			if a.json() && (failed == nil || len(done) > 0) {
				if err := a.render(cmd.OutOrStdout(), nonNil(done)); err != nil {
					return err
				}
			}
			return failed
		},
	}
	projectFlag(c, &project)
	c.Flags().BoolVar(&force, "force", false, "remove the record of an agent whose runtime broker was deregistered")
	c.Flags().BoolVar(&all, "all", false, "every agent of the project (--project)")
	completeArgs(c, a.completeAgents)
	return c
}

func (a *app) printAgent(cmd *cobra.Command, ag *api.Agent, project string) error {
	if a.json() {
		return a.render(cmd.OutOrStdout(), ag)
	}
	t, row := a.agentTable(cmd.OutOrStdout())
	t.Row(row(*ag, project)...)
	if err := t.Flush(); err != nil {
		return err
	}
	// An agent on a flat Runtime Broker has no profile: its pin says
	// where it runs instead.
	if p := ag.PinnedRuntimeTarget; p != nil {
		if _, err := fmt.Fprintf(cmd.OutOrStdout(), "Pinned runtime target: %s (runtime broker %s)\n", p.RuntimeTarget.String(), p.BrokerID); err != nil {
			return err
		}
	}
	if len(ag.Ports) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "Ports: %s\n", portsCell(ag.Ports))
	return err
}

var agentHeaders = []string{"NAME", "PROJECT", "BROKER", "PHASE", "CONTAINER", "AGE"}

// agentWideHeaders are -o wide's: the table's and what a person looks
// for next (the generation, the pin, the ports, the status message).
var agentWideHeaders = append(append([]string{}, agentHeaders...), "GEN", "PIN", "PORTS", "MESSAGE")

func agentRow(ag api.Agent, project string) []string {
	return []string{ag.Slug, project, show.OrDash(firstNonEmpty(ag.BrokerName, ag.BrokerID)), show.OrDash(ag.Phase),
		show.OrDash(ag.ContainerStatus), show.Age(ag.CreatedAt)}
}

func agentWideRow(ag api.Agent, project string) []string {
	pin := ""
	if p := ag.PinnedRuntimeTarget; p != nil {
		pin = p.RuntimeTarget.String()
	}
	return append(agentRow(ag, project), fmt.Sprint(ag.Generation), show.OrDash(pin), show.OrDash(portsCell(ag.Ports)),
		show.OrDash(oneLine(ag.StatusMessage, 80)))
}

// agentTable is the agents' table, wide or not.
func (a *app) agentTable(w io.Writer) (*show.Table, func(api.Agent, string) []string) {
	if a.wide() {
		return show.NewTable(w, agentWideHeaders...), agentWideRow
	}
	return show.NewTable(w, agentHeaders...), agentRow
}

// oneLine is s on one line, cut to n runes: a table cell.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
