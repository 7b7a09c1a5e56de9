package cli

import (
	"cmp"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
)

// newBrokerStartCmd is `scion runtime-broker start`: the broker process
// takes its Hub from server.broker.hub_endpoint and its credentials from
// the stored connection for that Hub.
func newBrokerStartCmd() *cobra.Command {
	var rtKind, logLevel, portRange string
	var heartbeat, grace time.Duration
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run this machine's Runtime Broker (connects to server.broker.hub_endpoint)",
		Long: `Run the Runtime Broker daemon. It dials the Hub named by
server.broker.hub_endpoint in settings.yaml (register and join save it),
authenticates with the stored credentials for that Hub, and keeps the
control channel open, reconnecting with backoff when it drops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := newLogger(logLevel)
			ports, err := parsePortRange(portRange)
			if err != nil {
				return err
			}
			s, err := config.LoadSettings()
			if err != nil {
				return err
			}
			warnSettings(log, s)
			ep := s.Server.Broker.HubEndpoint
			if ep == "" {
				return fmt.Errorf("server.broker.hub_endpoint is not set: run `scion runtime-broker register` (or join) first")
			}
			creds, err := config.LoadBrokerCredentials()
			if err != nil {
				return err
			}
			conn := creds.ForHub(ep)
			if conn == nil {
				return fmt.Errorf("no stored broker credentials for %s: run `scion runtime-broker register` against that Hub", ep)
			}
			if rtKind == "" {
				rtKind = s.Server.Broker.Runtime
			}
			dataDir := s.Server.Broker.DataDir
			if dataDir == "" {
				dataDir = config.Path("broker")
			}
			rt, agentHub, err := newRuntime(cmd.Context(), runtimeChoice{Kind: rtKind, BrokerID: conn.BrokerID, DataDir: dataDir, HubEndpoint: ep}, log)
			if err != nil {
				return err
			}
			defer rt.Close()
			var defaultImage string
			if rt.Name() == "docker" {
				// Like the workstation: no registry, so the demo image is
				// built locally (once) and runs agents that name no image,
				// and a team's first `scion start` works out of the box.
				if defaultImage, err = ensureDemoImage(cmd.Context(), log); err != nil {
					log.Warn("the demo image could not be built; agents without an image are refused until the Hub has a default image (scion hub settings set --default-image)", "err", err)
				}
			}
			self, _ := os.Executable()
			profiles, err := brokerProfiles(s.Server.Broker.Profiles)
			if err != nil {
				return err
			}
			// server.broker.agent_hub_endpoint, when set, wins over the
			// runtime's own choice (the Docker forwarder's address).
			b, err := broker.New(broker.Config{Profiles: profiles, AgentHubEndpoint: cmp.Or(s.Server.Broker.AgentHubEndpoint, agentHub), HubEndpoint: ep, BrokerID: conn.BrokerID, Name: conn.BrokerName,
				Secret: []byte(conn.Secret), Runtime: rt, DataDir: dataDir, Version: Version, Logger: log,
				HeartbeatInterval: heartbeat, Grace: grace, ScionBinary: self, PortRange: ports,
				Capabilities:  passthroughCapabilities(s.Server.Broker.AllowPassthrough),
				GitWorkspaces: broker.GitWorkspacesConfig{AllowLocalRemotes: s.Server.Broker.AllowLocalGitRemotes},
				DefaultImage:  defaultImage})
			if err != nil {
				return err
			}
			log.Info("runtime broker starting", "name", conn.BrokerName, "broker_id", conn.BrokerID, "hub", ep, "runtime", rt.Name())
			return b.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&rtKind, "runtime", "", "runtime: docker, kubernetes, process or fake (default: server.broker.runtime, else docker when an engine answers, else process)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.Flags().DurationVar(&heartbeat, "heartbeat-interval", 0, "control-channel heartbeat interval (default 5s)")
	cmd.Flags().DurationVar(&grace, "heartbeat-grace", 0, "silence past a heartbeat before the Hub is considered gone (default 10s)")
	cmd.Flags().StringVar(&portRange, "port-range", "", "host ports agents' published ports come from, FIRST-LAST, reserved for this broker (default 31000-31999)")
	return cmd
}
