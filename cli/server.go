package cli

import "github.com/spf13/cobra"

// newServerCmd is `scion server` (start). Owned by the Hub author.
func newServerCmd() *cobra.Command {
	return &cobra.Command{Use: "server", Short: "Run a Scion Hub (and, with --workstation, a local broker)"}
}
