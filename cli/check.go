package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// newCheckCmd is `scion check`: ADR-0046's probes, run on a broker host
// (d.Check runs them; the command parses the flags and renders).
func newCheckCmd(a *app, d Daemons) *cobra.Command {
	var o config.CheckOptions
	var files []string
	c := &cobra.Command{
		Use:   "check",
		Short: "Probe this broker's spoke clusters and its agents' sandbox identity",
		Long: `Run on a Runtime Broker's host. For each cluster of the broker's fleet
(clusters.toml beside settings.yaml, with the profiles' own blocks) it
reaches the spoke over its tier (GET /version within the timeout), checks
that the kubeconfig's token does not expire, that the spoke identity may
submit, follow and cancel Jobs and read their pods' logs, and that it
cannot read Secrets. On the broker's own cluster it checks, with
SubjectAccessReviews, that the agents' sandbox ServiceAccount cannot read
Secrets, create pods (or workloads, or exec) or mint tokens in the agents'
namespace, and that neither the account nor the runtime's pod template
mounts a token.

Each probe prints passed or failed, with the fix; the exit status is 1
when any failed. The kubeconfigs come from the Hub (broker-scoped secrets,
read with the broker's stored credentials), or from files with
--kubeconfig-secret-file NAME=PATH. A passed sandbox probe is necessary,
not sufficient: see docs/spokes.md.`,
		Example: `  scion check
  scion check --cluster wharf --timeout 5s
  scion check --profile gpu -o json
  scion check --kubeconfig-secret-file SPOKE_WHARF_KUBECONFIG=./wharf.kubeconfig`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Timeout < 0 {
				return usageErrorf("--timeout must not be negative")
			}
			for _, f := range files {
				name, path, ok := strings.Cut(f, "=")
				if !ok || name == "" || path == "" {
					return usageErrorf("--kubeconfig-secret-file %q: use NAME=PATH", f)
				}
				if o.KubeconfigFiles == nil {
					o.KubeconfigFiles = map[string]string{}
				}
				o.KubeconfigFiles[name] = path
			}
			if d.Check == nil {
				return errNoDaemon
			}
			r, err := d.Check(cmd.Context(), o)
			if err != nil {
				return err
			}
			if a.json() {
				if err := a.render(cmd.OutOrStdout(), r); err != nil {
					return err
				}
			} else {
				writeChecks(cmd.OutOrStdout(), r)
			}
			if r.Failed() > 0 {
				return &exitCodeError{exitError}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.ClustersPath, "clusters", "", "the fleet file (default: clusters.toml beside settings.yaml)")
	f.StringVar(&o.Profile, "profile", "", "only this broker profile's clusters and namespaces (default: every profile's, and the fleet file's clusters)")
	f.StringVar(&o.Cluster, "cluster", "", "only this spoke (no sandbox probes)")
	f.DurationVar(&o.Timeout, "timeout", 0, "bound on reaching each cluster: each connect step and each request (default 10s)")
	f.StringArrayVar(&files, "kubeconfig-secret-file", nil, "NAME=PATH: read secret NAME from PATH instead of the Hub (repeatable)")
	return c
}

// writeChecks prints one line per probe, the fix under each failure, and
// a summary.
func writeChecks(w io.Writer, r *api.CheckReport) {
	for _, c := range r.Checks {
		where := c.Cluster
		if c.Tier != "" {
			where += " [" + c.Tier + "]"
		}
		if c.Profile != "" {
			where += " (profile " + c.Profile + ")"
		}
		fmt.Fprintf(w, "%-6s  %s  %s: %s\n", c.Status, where, c.Probe, c.Message)
		if c.Status != api.CheckPassed && c.Fix != "" {
			fmt.Fprintf(w, "        fix: %s\n", c.Fix)
		}
	}
	if n := r.Failed(); n > 0 {
		fmt.Fprintf(w, "%d of %d probes failed.\n", n, len(r.Checks))
	} else {
		fmt.Fprintf(w, "All %d probes passed.\n", len(r.Checks))
	}
}
