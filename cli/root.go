// Package cli is the scion command line. Its cobra commands parse flags,
// resolve the Hub to talk to (see hubconn.go), call it through package
// client and render the result as a table or as JSON (-o json).
//
// Commands write to cmd.OutOrStdout / cmd.ErrOrStderr and read
// cmd.InOrStdin, never to the os streams directly, so tests can run the
// whole tree in process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/hubconn"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/client/hubtls"
	"github.com/scion-go/scion/client/idtoken"
)

// app holds the global flags; every command closes over it.
type app struct {
	hub    string
	output string
	// format is output parsed (validateOutput).
	format show.Format
	// target is the Hub the command resolved (set by connect), so that a
	// 401 can say how to sign in to it.
	target *hubconn.Target
	// ownCredential: the command authenticates with a credential of its
	// own (join's join token), so a 401 is about that credential and
	// signing in would not help.
	ownCredential bool
	// transport is register's and join's --transport-mode and
	// --transport-audience (nil: not given): connect uses them for the
	// registration's own requests, and they are saved with it.
	transport *idtoken.Settings
	// ca is --ca: the CA file the Hub's certificate is checked against,
	// over hubs.<name>.ca and SCION_HUB_CA.
	ca string
	// insecureHTTP is register's and join's --insecure-http: plain http
	// to a Hub that is not on loopback, allowed and saved with the
	// connection.
	insecureHTTP bool
	// completing: a shell completion is running, which must answer
	// within its own bound (no agent-token renewal on the way).
	completing bool
}

// NewRoot builds the scion command tree; d runs its daemons (see Daemons).
func NewRoot(d Daemons) *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:   "scion",
		Short: "Run AI coding agents in containers on Runtime Brokers, through a Scion Hub",
		Long: `scion talks to a Scion Hub, the control plane that places agents on Runtime
Brokers (laptops, VMs, Kubernetes clusters) and runs them in containers.

The Hub a command talks to is, in order: --hub (a URL or a hub list
nickname); inside an agent container, SCION_HUB_ENDPOINT then SCION_HUB_URL
(with SCION_AGENT_TOKEN, or the renewed token in $HOME/.scion/agent-token
when it lasts longer; the CLI renews the agent's token when half its
lifetime is left); the hub list's current hub (scion hub use); the local
workstation Hub started by 'scion server start --workstation'. A hub list
entry uses its own token or none, never another entry's.`,
		Example: `  scion server start --workstation                  # a local Hub and broker
  scion start my-agent -- claude                      # create and start an agent
  scion list                                          # agents of the current project
  scion hub add team https://hub.example.com --use    # use a team Hub
  scion hub brokers -o json                           # Runtime Brokers, as JSON`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.validateOutput()
		},
	}
	groupCmd(root)
	pf := root.PersistentFlags()
	pf.StringVar(&a.hub, "hub", "", "Hub to use: a URL or a hub list nickname")
	pf.StringVarP(&a.output, "output", "o", outputTable, show.FormatHelp)
	pf.StringVar(&a.ca, "ca", "", "PEM file of the CA that signed the Hub's TLS certificate (a private CA); over hubs.<name>.ca and SCION_HUB_CA")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })

	root.AddCommand(
		newServerCmd(d),
		newHubCmd(a),
		newProjectCmd(a),
		newBrokerCmd(a, d),
		newJobCmd(a),
		newAgentDemoCmd(),
		newImageCmd(a, d),
		newInstallBinaryCmd(),
		newCheckCmd(a, d),
		newVersionCmd(a),
		newDescribeCmd(a),
	)
	// --version: the CLI's alone, no Hub call ('scion version' adds it).
	root.Version = Version
	root.SetVersionTemplate("scion {{.Version}}\n")
	root.AddCommand(newAgentCmds(a)...)
	a.addCompletions(root)
	explainErrors(root, a.explain)
	return root
}

// explainErrors passes the error of every command's RunE through f.
func explainErrors(c *cobra.Command, f func(error) error) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := run(cmd, args); err != nil {
				return f(err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		explainErrors(sub, f)
	}
}

// explain adds the fix to a 401 from a Hub the CLI called with no token
// (a hub list entry that is not signed in): sign in to that entry. The
// CLI never borrows another entry's token for it (see hubconn.Resolve).
func (a *app) explain(err error) error {
	var ae *api.Error
	t := a.target
	if t != nil {
		fix := "pass --ca <file> with the CA certificate that signed it"
		if t.Name != "" {
			fix += fmt.Sprintf(", or store it with 'scion hub add %s %s --ca <file>'", t.Name, t.URL)
		}
		if e := hubtls.Explain(err, t.URL, fix); e != err {
			return e
		}
	}
	if t == nil || t.Token != "" || a.ownCredential || !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		return err
	}
	login := "scion hub auth login"
	if t.Name != "" {
		login += " --hub " + t.Name
	}
	hint := *ae
	hint.Message = fmt.Sprintf("%s: no token for %s; sign in with `%s`", ae.Message, hubLabel(t), login)
	return &hint
}

func hubLabel(t *hubconn.Target) string {
	if t.Name != "" {
		return fmt.Sprintf("hub %q (%s)", t.Name, t.URL)
	}
	return t.URL
}

// Execute runs the scion command line on os.Args, its daemons being d, and
// returns the process exit code: 0 on success, 1 on an error, 2 on a
// usage error.
func Execute(d Daemons) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, NewRoot(d))
}

// run executes root (with whatever args were set on it) and turns the
// error into a message on stderr and an exit code.
func run(ctx context.Context, root *cobra.Command) int {
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	if cmd == nil {
		cmd = root
	}
	return reportError(root.ErrOrStderr(), cmd, err)
}

// groupCmd makes a command that only holds subcommands refuse an unknown
// subcommand as a usage error (cobra would otherwise print help and exit 0)
// and print its help when run bare.
func groupCmd(c *cobra.Command) *cobra.Command {
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(quoteAll(s), " or ") + "?"
			}
			return usageErrorf("%s", msg)
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	return c
}

// connect resolves the CLI's Hub and returns a client for it.
func (a *app) connect() (*hubconn.Target, *client.Client, error) {
	t, err := hubconn.Load(a.hub)
	if err != nil {
		return nil, nil, err
	}
	a.target = t
	if a.ca != "" {
		ca, err := filepath.Abs(a.ca)
		if err != nil {
			return nil, nil, err
		}
		if err := hubconn.WithCA(t, ca); err != nil {
			return nil, nil, usageErr(err)
		}
	}
	if a.transport != nil {
		if err := hubconn.WithTransport(t, a.transport); err != nil {
			return nil, nil, err
		}
	}
	if t.AgentTokenFile != "" && !a.completing {
		hubconn.RenewAgentToken(t, hubconn.Now())
	}
	return t, hubconn.NewClient(t), nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
