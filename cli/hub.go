package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/cli/hubconn"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client/hubtls"
	"github.com/scion-go/scion/config"
)

func newHubCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "hub",
		Short: "Manage the hub list and administer a Hub",
		Long: `The hub list (hubs.yaml in the Scion home) names the Hubs this CLI knows and
which one is current. The other hub subcommands administer the selected Hub:
its Runtime Brokers, hub-wide settings and limits, users and their roles, your
access tokens, and Hub secrets.`,
	})
	c.AddCommand(newHubAddCmd(a), newHubUseCmd(a), newHubListCmd(a), newHubAuthCmd(a),
		newHubBrokersCmd(a), newHubSettingsCmd(a), newHubLimitsCmd(a), newHubTokensCmd(a), newHubMetricsTokensCmd(a), newHubSecretCmd(a), newHubUsersCmd(a))
	return c
}

// hubAddedView is 'scion hub add -o json'.
type hubAddedView struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Current  bool   `json:"current"`
	SignedIn bool   `json:"signedIn"`
	CA       string `json:"ca,omitempty"`
}

func newHubAddCmd(a *app) *cobra.Command {
	var use bool
	var token, ca string
	c := &cobra.Command{
		Use:   "add <name> <hub-url>",
		Short: "Add a Hub to the hub list (or change its URL)",
		Long: `Add a Hub to the hub list under a nickname. The nickname can then be used
with --hub or 'scion hub use'. Sign in with 'scion hub auth login', or pass
--token to store a bearer token right away.`,
		Example: `  scion hub add team https://hub.example.com --use
  scion hub add corp https://hub.corp.internal --ca corp-ca.pem
  scion hub add lab http://10.0.0.5:8080 --token "$LAB_TOKEN"`,
		Args: exactArgs("name", "hub-url"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := validateName("hub", name); err != nil {
				return err
			}
			u, err := hubconn.NormalizeURL(args[1])
			if err != nil {
				return usageErr(err)
			}
			l, err := config.LoadHubList()
			if err != nil {
				return err
			}
			e := &config.HubEntry{URL: u, Token: token}
			if ca != "" {
				if e.CA, err = filepath.Abs(ca); err != nil {
					return err
				}
				if _, err := hubtls.LoadCA(e.CA); err != nil {
					return usageErr(err)
				}
			}
			// Re-adding the same URL keeps the stored sign-in.
			if old, ok := l.Hubs[name]; ok && token == "" && hubconn.SameURL(old.URL, u) {
				e.Token = old.Token
			}
			if old, ok := l.Hubs[name]; ok && ca == "" && hubconn.SameURL(old.URL, u) {
				e.CA = old.CA
			}
			l.Hubs[name] = e
			if use {
				l.Current = name
			}
			if err := l.Save(); err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), hubAddedView{Name: name, URL: u, Current: l.Current == name, SignedIn: e.Token != "", CA: e.CA})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Added hub %s (%s).\n", name, u)
			if use {
				fmt.Fprintf(w, "Hub %s is now current.\n", name)
			}
			if e.Token == "" {
				fmt.Fprintf(w, "Sign in with: scion hub auth login --hub %s\n", name)
			}
			if err := hubtls.CheckScheme(u, false, ""); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s is plain http and not on this machine: tokens cross the network in the clear, and brokers refuse it without --insecure-http.\n", u)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&use, "use", false, "make it the current hub")
	c.Flags().StringVar(&token, "token", "", "bearer token to store for this hub")
	c.Flags().StringVar(&ca, "ca", "", "PEM file of the CA that signed the Hub's TLS certificate, stored as hubs.<name>.ca (a private CA)")
	return c
}

func newHubUseCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "use <name>",
		Short:   "Make a hub list entry the current hub",
		Example: `  scion hub use team`,
		Args:    exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := config.LoadHubList()
			if err != nil {
				return err
			}
			if _, ok := l.Hubs[args[0]]; !ok {
				return fmt.Errorf("no hub %q in the hub list (known: %s); add it with 'scion hub add'", args[0], strings.Join(l.Names(), ", "))
			}
			l.Current = args[0]
			if err := l.Save(); err != nil {
				return err
			}
			if a.json() {
				e := l.Hubs[args[0]]
				return a.render(cmd.OutOrStdout(), hubListItem{Name: args[0], URL: e.URL, Current: true, SignedIn: e.Token != ""})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Hub %s is now current.\n", args[0])
			return nil
		},
	}
}

// hubListItem is one hub list entry as -o json prints it: tokens are
// never printed.
type hubListItem struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Current  bool   `json:"current"`
	SignedIn bool   `json:"signedIn"`
}

func newHubListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the hub list; * marks the current hub",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := config.LoadHubList()
			if err != nil {
				return err
			}
			items := []hubListItem{}
			for _, n := range l.Names() {
				e := l.Hubs[n]
				items = append(items, hubListItem{n, e.URL, n == l.Current, e.Token != ""})
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), items)
			}
			t := show.NewTable(cmd.OutOrStdout(), "CURRENT", "NAME", "URL", "SIGNED IN")
			for _, it := range items {
				mark := ""
				if it.Current {
					mark = "*"
				}
				t.Row(mark, it.Name, it.URL, show.YesNo(it.SignedIn))
			}
			return t.Flush()
		},
	}
}

func newHubAuthCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{Use: "auth", Short: "Sign in to a Hub"})
	var token string
	var device bool
	login := &cobra.Command{
		Use:   "login",
		Short: "Sign in to the current hub and store the token",
		Long: `Sign in to the current hub (or the hub list entry named by --hub) and store
the Hub token in the hub list.

On a terminal, with no --token, this runs the OIDC device flow through the
Hub: it prints an address and a code, you approve the sign-in there in a
browser (on any device), and the command finishes by itself. --device asks
for the device flow even when standard input is not a terminal. A Hub
without OIDC falls back to asking for a token.

With --token, or a token piped on standard input, the token is checked
with the Hub and stored.`,
		Example: `  scion hub auth login                       # device flow: open the address shown, enter the code
  scion hub auth login --token "$TOKEN"
  echo "$TOKEN" | scion hub auth login --hub team`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if device && token != "" {
				return usageErrorf("--device and --token exclude each other")
			}
			l, err := config.LoadHubList()
			if err != nil {
				return err
			}
			name := a.hub
			if name == "" {
				name = l.Current
			}
			if name == "" {
				return fmt.Errorf("no current hub: add one with 'scion hub add <name> <hub-url> --use' (or pass --hub <name>)")
			}
			nick, e, err := l.Lookup(name)
			if err != nil {
				return err
			}
			if nick == "" {
				return fmt.Errorf("%s is not in the hub list: add it with 'scion hub add <name> %s' first", name, name)
			}
			u, err := hubconn.NormalizeURL(e.URL)
			if err != nil {
				return err
			}
			// A Hub behind IAP needs the transport token on the sign-in's
			// requests too.
			anon := &hubconn.Target{URL: u}
			if err := hubconn.WithTransport(anon, nil); err != nil {
				return err
			}
			if token == "" && (device || isTerminal(cmd.InOrStdin())) {
				token, err = deviceSignIn(cmd.Context(), cmd.ErrOrStderr(), hubconn.NewClient(anon))
				switch {
				case errors.Is(err, errNoOIDC) && !device:
					fmt.Fprintf(cmd.ErrOrStderr(), "Hub %s has no OIDC sign-in; sign in with a token.\n", nick)
				case errors.Is(err, errNoOIDC):
					return fmt.Errorf("hub %s has no OIDC sign-in configured: ask its admin for a token and run 'scion hub auth login --token TOKEN'", nick)
				case err != nil:
					return err
				}
			}
			if token == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "Token for hub %s (%s): ", nick, e.URL)
				if token, err = readLine(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			if token == "" {
				return usageErrorf("no token given")
			}
			who, err := hubconn.NewClient(&hubconn.Target{URL: u, Token: token, Transport: anon.Transport}).Whoami(cmd.Context())
			if err != nil {
				return err
			}
			e.Token = token
			if err := l.Save(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Signed in to %s as %s %s (role %s).\n", nick, who.Kind, show.OrDash(firstNonEmpty(who.Name, who.ID)), show.OrDash(who.Role))
			return nil
		},
	}
	login.Flags().StringVar(&token, "token", "", "bearer token (default: the device flow on a terminal, else read from standard input)")
	login.Flags().BoolVar(&device, "device", false, "sign in with the OIDC device flow even when standard input is not a terminal")
	c.AddCommand(login)
	return c
}

// readLine reads one line, without the newline. There is no terminal echo
// control: the token is expected to be piped or pasted.
func readLine(r io.Reader) (string, error) {
	s, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
