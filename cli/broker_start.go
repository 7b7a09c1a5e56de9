package cli

import (
	"github.com/spf13/cobra"

	"github.com/scion-go/scion/config"
)

// newBrokerStartCmd is `scion runtime-broker start`: the broker process
// takes its Hub from server.broker.hub_endpoint and its credentials from
// the stored connection for that Hub (d.Broker does; the command parses
// the flags).
func newBrokerStartCmd(d Daemons) *cobra.Command {
	var o config.BrokerOptions
	var portRange string
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run this machine's Runtime Broker (connects to server.broker.hub_endpoint)",
		Long: `Run the Runtime Broker daemon. It dials the Hub named by
server.broker.hub_endpoint in settings.yaml (register and join save it),
authenticates with the stored credentials for that Hub, and keeps the
control channel open, reconnecting with backoff when it drops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ports, err := parsePortRange(portRange)
			if err != nil {
				return err
			}
			if err := checkLogFormat(o.LogFormat); err != nil {
				return err
			}
			if d.Broker == nil {
				return errNoDaemon
			}
			o.PortRange, o.Version = ports, Version
			return d.Broker(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Runtime, "runtime", "", "runtime: docker, kubernetes, process or fake (default: server.broker.runtime, else docker when an engine answers, else process)")
	cmd.Flags().StringVar(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
	cmd.Flags().StringVar(&o.LogFormat, "log-format", config.LogFormatText, "log lines as text (key=value) or json (one object per line, for a log pipeline)")
	cmd.Flags().DurationVar(&o.HeartbeatInterval, "heartbeat-interval", 0, "control-channel heartbeat interval (default 2s)")
	cmd.Flags().DurationVar(&o.HeartbeatGrace, "heartbeat-grace", 0, "silence past a heartbeat before the Hub is considered gone (default 6s)")
	cmd.Flags().StringVar(&portRange, "port-range", "", "host ports agents' published ports come from, FIRST-LAST, reserved for this broker (default 31000-31999)")
	cmd.Flags().StringVar(&o.Clusters, "clusters", "", "the fleet file of delegated Jobs' spoke clusters (default: clusters.toml beside settings.yaml; docs/spokes.md)")
	return cmd
}
