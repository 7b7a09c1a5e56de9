package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
)

func newHubMetricsTokensCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "metrics-tokens",
		Short: "Create, list and revoke scrape tokens for the Hub's /metrics (admin)",
		Long: `The Hub's /metrics answers only a scrape token or a Hub admin's own token
(anyone else gets 401 or 403): the metrics name every spoke cluster that ran
a Job, which members of other profiles must not learn. A scrape token reads
/metrics and nothing else, and only while the admin who made it is one.
Give it to Prometheus as a bearer token (authorization.credentials_file).`,
	})
	var name, expires string
	create := &cobra.Command{
		Use:     "create",
		Short:   "Create a scrape token; it is shown only once",
		Example: `  scion hub metrics-tokens create --name prometheus > /etc/prometheus/scion-hub.token`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "name"); err != nil {
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			t, err := cl.CreateMetricsToken(cmd.Context(), api.CreateMetricsTokenRequest{Name: name, ExpiresIn: expires})
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), t)
			}
			fmt.Fprintln(cmd.OutOrStdout(), t.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "Scrape token %s (%s), expires %s. It is shown only once.\n", t.Name, t.ID, timeText(t.ExpiresAt))
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "a name to recognise the token by")
	create.Flags().StringVar(&expires, "expires", "", "lifetime as a Go duration (default and at most 8760h)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List your scrape tokens (never their values)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			ts, err := cl.ListMetricsTokens(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), ts)
			}
			t := show.NewTable(cmd.OutOrStdout(), "NAME", "ID", "EXPIRES", "REVOKED")
			for _, x := range ts {
				t.Row(x.Name, x.ID, timeText(x.ExpiresAt), timeText(x.RevokedAt))
			}
			return t.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke <id>",
		Short: "Revoke a scrape token (any admin's)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if err := cl.RevokeMetricsToken(cmd.Context(), args[0]); err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), revokedView{ID: args[0], Revoked: true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Scrape token %s revoked.\n", args[0])
			return nil
		},
	}
	c.AddCommand(create, list, revoke)
	return c
}
