package cli

import "github.com/spf13/cobra"

// newBrokerStartCmd is `scion runtime-broker start`. Owned by the Hub author.
func newBrokerStartCmd() *cobra.Command {
	return &cobra.Command{Use: "start", Short: "Run this machine's Runtime Broker"}
}
