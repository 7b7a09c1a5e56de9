package cli

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"
)

// versionView is 'scion version -o json'.
type versionView struct {
	CLI versionCLI  `json:"cli"`
	Hub *versionHub `json:"hub,omitempty"`
}

type versionCLI struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// versionHub is the selected Hub's version, or why it is not known.
type versionHub struct {
	URL     string `json:"url"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// versionTimeout bounds the Hub's answer: a version must not hang.
const versionTimeout = 5 * time.Second

func newVersionCmd(a *app) *cobra.Command {
	var clientOnly bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version and the selected Hub's",
		Long: `Print the version of this scion binary and, beside it, the version of the
Hub the CLI selects (its /healthz, which needs no sign-in). A Hub that
cannot be reached is said so; the command still succeeds. --client skips
the Hub; 'scion --version' prints the CLI's alone.`,
		Example: `  scion version
  scion version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := versionView{CLI: versionCLI{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}}
			if !clientOnly {
				v.Hub = a.hubVersion(cmd)
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), v)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "CLI: %s (%s, %s)\n", v.CLI.Version, v.CLI.GoVersion, v.CLI.Platform)
			switch h := v.Hub; {
			case clientOnly:
			case h == nil:
				fmt.Fprintln(w, "Hub: none selected")
			case h.Error != "":
				fmt.Fprintf(w, "Hub: %s: %s\n", h.URL, h.Error)
			default:
				fmt.Fprintf(w, "Hub: %s (%s)\n", h.Version, h.URL)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&clientOnly, "client", false, "the CLI's version only; no call to the Hub")
	return c
}

// hubVersion asks the selected Hub for its version; nil when no Hub is
// selected.
func (a *app) hubVersion(cmd *cobra.Command) *versionHub {
	t, cl, err := a.connect()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), versionTimeout)
	defer cancel()
	h, err := cl.Healthz(ctx)
	if err != nil {
		return &versionHub{URL: t.URL, Error: a.explain(err).Error()}
	}
	return &versionHub{URL: t.URL, Version: h.Version}
}
