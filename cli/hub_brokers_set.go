package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
)

// newHubBrokersSetCmd is `scion hub brokers set`: a broker's own settings
// on the Hub (PATCH /runtime-brokers/{broker}). Its limit is how a flat
// instance's cap is changed after its registration, and how an operator
// applies the caps `scion runtime-broker plan-split` printed.
func newHubBrokersSetCmd(a *app) *cobra.Command {
	var maxAgents int
	var inherit, autoProvide bool
	c := &cobra.Command{
		Use:   "set <broker>",
		Short: "Change a Runtime Broker's settings on the Hub: its agent limit (admin) or auto-provide",
		Long: `Change one Runtime Broker's settings on the Hub.

--max-agents N caps how many agents may run on the broker (0 = unlimited),
overriding the hub-wide max_agents_per_broker; --inherit-max-agents drops
the broker's own limit so that it inherits the hub-wide one again. Only a
hub admin may change a limit. Each flat Runtime Broker instance has its own
broker ID and so its own limit.

--auto-provide makes the broker provide for new projects automatically
(the broker's owner or an admin may change it).`,
		Example: `  scion hub brokers set k8s-batch --max-agents 20
  scion hub brokers set k8s-batch --inherit-max-agents
  scion hub brokers set gpu-box --auto-provide=false -o json`,
		Args: exactArgs("broker"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req api.UpdateBrokerRequest
			fl := cmd.Flags()
			if fl.Changed("max-agents") && inherit {
				return usageErrorf("--max-agents and --inherit-max-agents exclude each other")
			}
			if fl.Changed("max-agents") {
				if maxAgents < 0 {
					return usageErrorf("invalid --max-agents %d: must be 0 (unlimited) or more", maxAgents)
				}
				req.Settings = &api.BrokerSettings{MaxAgents: &maxAgents}
			}
			req.ClearMaxAgents = inherit
			if fl.Changed("auto-provide") {
				req.AutoProvide = &autoProvide
			}
			if req.Settings == nil && !req.ClearMaxAgents && req.AutoProvide == nil {
				return usageErrorf("nothing to set: pass --max-agents N, --inherit-max-agents or --auto-provide")
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			b, err := cl.UpdateBroker(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), b)
			}
			own := "inherits the hub-wide max_agents_per_broker"
			if b.Settings.MaxAgents != nil {
				own = "its own"
			}
			return show.KeyValues(cmd.OutOrStdout(), "broker", b.Name+" ("+b.ID+")",
				"limit", fmt.Sprintf("%s (%s)", show.LimitText(b.EffectiveMaxAgents), own),
				"auto_provide", show.YesNo(b.AutoProvide))
		},
	}
	c.Flags().IntVar(&maxAgents, "max-agents", 0, "running agents allowed on this broker (0 = unlimited)")
	c.Flags().BoolVar(&inherit, "inherit-max-agents", false, "drop the broker's own limit: inherit the hub-wide one")
	c.Flags().BoolVar(&autoProvide, "auto-provide", false, "provide for new projects automatically")
	return c
}
