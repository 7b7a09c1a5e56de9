package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
)

func newHubTokensCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "tokens",
		Short: "Create, list and revoke your single-project user access tokens",
		Long: `A user access token works for one project, only through its scopes, and
never beyond what you can do yourself. It cannot read or dispatch to Runtime
Brokers other than those with AutoProvide on: sign in for that.

Scopes: project:read, project:update, project:agent:read,
project:agent:create, project:agent:lifecycle.`,
	})
	var name, project, expires string
	var scopes []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an access token; it is shown only once",
		Example: `  scion hub tokens create --name ci --project web --scope project:agent:create
  scion hub tokens create --name bot --project web --scope project:read --expires 24h -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "name", "project"); err != nil {
				return err
			}
			if len(scopes) == 0 {
				return usageErrorf("a token needs at least one --scope")
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			t, err := cl.CreateAccessToken(cmd.Context(), api.CreateAccessTokenRequest{Name: name, Project: project, Scopes: scopes, ExpiresIn: expires})
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), t)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Token %s (%s) for project %s, scopes %s, expires %s:\n\n  %s\n\n", t.Name, t.ID, t.ProjectID,
				strings.Join(t.Scopes, ","), timeText(t.ExpiresAt), t.Token)
			fmt.Fprintln(w, "Store it now: the Hub does not show it again.")
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "a name to recognise the token by")
	create.Flags().StringVar(&project, "project", "", "the one project the token works for")
	create.Flags().StringArrayVar(&scopes, "scope", nil, "scope (repeatable)")
	create.Flags().StringVar(&expires, "expires", "", "lifetime as a Go duration (default 720h, at most 8760h)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List your access tokens (never their values)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			ts, err := cl.ListAccessTokens(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), ts)
			}
			t := show.NewTable(cmd.OutOrStdout(), "NAME", "ID", "PROJECT", "SCOPES", "EXPIRES", "REVOKED")
			for _, x := range ts {
				t.Row(x.Name, x.ID, x.ProjectID, strings.Join(x.Scopes, ","), timeText(x.ExpiresAt), timeText(x.RevokedAt))
			}
			return t.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:     "revoke <id>",
		Short:   "Revoke an access token",
		Example: `  scion hub tokens revoke 01a2...`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if err := cl.RevokeAccessToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), revokedView{ID: args[0], Revoked: true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Token %s revoked.\n", args[0])
			return nil
		},
	}
	c.AddCommand(create, list, revoke)
	return c
}

func timeText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func newHubSecretCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "secret",
		Short: "Set, list and delete Hub secrets",
		Long: `Hub secrets are stored encrypted and referenced by name: an agent created
with --secret NAME gets the value in its environment as NAME. The API never
returns a value. Without --project a secret is hub-wide (admins only).

With --broker BROKER a secret is scoped to that Runtime Broker (hub admins
only): a spoke cluster's kubeconfig or a bastion key, which the broker
fetches with its own signed request when it runs a delegated Job. No agent
can name one, and no API answer carries its value.`,
	})
	var project, broker, fromFile string
	set := &cobra.Command{
		Use:   "set <name>",
		Short: "Set a secret; the value is read from standard input or --from-file",
		Example: `  printf %s "$ANTHROPIC_API_KEY" | scion hub secret set ANTHROPIC_API_KEY
  scion hub secret set DB_PASSWORD --project web < password.txt
  scion hub secret set SPOKE_B200_KUBECONFIG --broker gpu-broker --from-file b200.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := secretTarget(project, broker); err != nil {
				return err
			}
			value, err := secretValue(cmd, fromFile)
			if err != nil {
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if broker != "" {
				x, err := cl.PutBrokerSecret(cmd.Context(), broker, args[0], value)
				if err != nil {
					return err
				}
				if a.json() {
					return a.render(cmd.OutOrStdout(), x)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Secret %s set for runtime broker %s.\n", x.Name, broker)
				return nil
			}
			x, err := cl.PutSecret(cmd.Context(), project, args[0], value)
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), x)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Secret %s set%s.\n", x.Name, scopeText(project))
			return nil
		},
	}
	set.Flags().StringVar(&fromFile, "from-file", "", "read the value from this file, kept as it is (a kubeconfig, a key)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List secret names (never values)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := secretTarget(project, broker); err != nil {
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if broker != "" {
				xs, err := cl.ListBrokerSecrets(cmd.Context(), broker)
				if err != nil {
					return err
				}
				if a.json() {
					return a.render(cmd.OutOrStdout(), xs)
				}
				t := show.NewTable(cmd.OutOrStdout(), "NAME", "BROKER", "UPDATED", "BY")
				for _, x := range xs {
					t.Row(x.Name, x.BrokerID, x.UpdatedAt.Local().Format("2006-01-02 15:04"), show.OrDash(x.CreatedBy))
				}
				return t.Flush()
			}
			xs, err := cl.ListSecrets(cmd.Context(), project)
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), xs)
			}
			t := show.NewTable(cmd.OutOrStdout(), "NAME", "UPDATED", "BY")
			for _, x := range xs {
				t.Row(x.Name, x.UpdatedAt.Local().Format("2006-01-02 15:04"), show.OrDash(x.CreatedBy))
			}
			return t.Flush()
		},
	}
	del := &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := secretTarget(project, broker); err != nil {
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if broker != "" {
				if err := cl.DeleteBrokerSecret(cmd.Context(), broker, args[0]); err != nil {
					return err
				}
				if a.json() {
					return a.render(cmd.OutOrStdout(), secretDeletedView{Name: args[0], Broker: broker, Deleted: true})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Secret %s of runtime broker %s deleted.\n", args[0], broker)
				return nil
			}
			if err := cl.DeleteSecret(cmd.Context(), project, args[0]); err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), secretDeletedView{Name: args[0], Project: project, Deleted: true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Secret %s deleted%s.\n", args[0], scopeText(project))
			return nil
		},
	}
	for _, x := range []*cobra.Command{set, list, del} {
		x.Flags().StringVar(&project, "project", "", "the project's secrets (default: hub-wide)")
		x.Flags().StringVar(&broker, "broker", "", "a Runtime Broker's own secrets (name or ID; hub admins)")
	}
	c.AddCommand(set, list, del)
	return c
}

func secretTarget(project, broker string) error {
	if project != "" && broker != "" {
		return usageErrorf("--project and --broker exclude each other: a broker's secrets belong to no project")
	}
	return nil
}

// secretValue reads a secret's value: from --from-file as it is (a
// kubeconfig's last newline included), else from standard input without
// its trailing newline (what echo or a here-string adds).
func secretValue(cmd *cobra.Command, fromFile string) (string, error) {
	if fromFile != "" {
		v, err := readBounded(fromFile, api.MaxSecretValue, "a secret")
		if err != nil {
			return "", err
		}
		if len(v) == 0 {
			return "", usageErrorf("%s is empty", fromFile)
		}
		return string(v), nil
	}
	v, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), api.MaxSecretValue+1))
	if err != nil {
		return "", err
	}
	value := strings.TrimRight(string(v), "\r\n")
	if value == "" {
		return "", usageErrorf("no value on standard input")
	}
	return value, nil
}

func scopeText(project string) string {
	if project == "" {
		return " (hub-wide)"
	}
	return " in project " + project
}

func newHubUsersCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "users",
		Short: "List users and change their Hub role (admin)",
		Long: `Users appear at their first sign-in with the Hub's default role (viewer
unless --oidc-default-role says otherwise). Roles: admin, member, viewer.`,
	})
	list := &cobra.Command{
		Use:   "list",
		Short: "List the Hub's users",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			us, err := cl.ListUsers(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), us)
			}
			t := show.NewTable(cmd.OutOrStdout(), "ID", "NAME", "EMAIL", "ROLE")
			for _, u := range us {
				t.Row(u.ID, u.Name, show.OrDash(u.Email), u.Role)
			}
			return t.Flush()
		},
	}
	setRole := &cobra.Command{
		Use:     "set-role <user-id> <admin|member|viewer>",
		Short:   "Change a user's Hub role",
		Example: `  scion hub users set-role 01a2... member`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			u, err := cl.SetUserRole(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), u)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "User %s is now %s.\n", u.Name, u.Role)
			return nil
		},
	}
	c.AddCommand(list, setRole)
	return c
}
