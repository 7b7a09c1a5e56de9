package launch

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/config"
)

// Broker runs `scion runtime-broker start` until ctx ends or SIGINT or
// SIGTERM arrives: the broker takes its Hub from
// server.broker.hub_endpoint and its credentials from the stored
// connection for that Hub, builds its runtime and keeps the control
// channel open.
func Broker(parent context.Context, o config.BrokerOptions) error {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := newLogger(o.LogLevel)
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
	if s.Server.Broker.Instances.Configured() {
		return brokerInstances(ctx, s, creds, o, log)
	}
	f, err := loadFleet(o.Clusters)
	if err != nil {
		return err
	}
	conn := creds.ForHub(ep)
	if conn == nil {
		return fmt.Errorf("no stored broker credentials for %s: run `scion runtime-broker register` against that Hub", ep)
	}
	rtKind := cmp.Or(o.Runtime, s.Server.Broker.Runtime)
	dataDir := s.Server.Broker.DataDir
	if dataDir == "" {
		dataDir = config.Path("broker")
	}
	rt, agentHub, err := newRuntime(parent, runtimeChoice{Kind: rtKind, BrokerID: conn.BrokerID, DataDir: dataDir, HubEndpoint: ep}, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	var defaultImage string
	if rt.Name() == "docker" {
		// Like the workstation: no registry, so the demo image is
		// built locally (once) and runs agents that name no image,
		// and a team's first `scion start` works out of the box.
		if defaultImage, err = ensureDemoImage(parent, log); err != nil {
			log.Warn("the demo image could not be built; agents without an image are refused until the Hub has a default image (scion hub settings set --default-image)", "err", err)
		}
	}
	self, _ := os.Executable()
	profiles, err := brokerProfiles(s.Server.Broker.Profiles)
	if err != nil {
		return err
	}
	var ambient *rest.Config
	var ambientNS string
	if rt.Name() == config.RuntimeKubernetes {
		ambient, ambientNS = ambientCluster(s, "", "", log)
	}
	// server.broker.agent_hub_endpoint, when set, wins over the
	// runtime's own choice (the Docker forwarder's address).
	gitWS, err := gitWorkspaces(s, false)
	if err != nil {
		return err
	}
	hc, err := hubHTTPClient(conn, ep)
	if err != nil {
		return fmt.Errorf("connection %s: %w", conn.Name, err)
	}
	b, err := broker.New(broker.Config{Profiles: profiles, AgentHubEndpoint: cmp.Or(s.Server.Broker.AgentHubEndpoint, agentHub), HubEndpoint: ep, BrokerID: conn.BrokerID, Name: conn.BrokerName,
		Secret: []byte(conn.Secret), Runtime: rt, DataDir: dataDir, Version: o.Version, Logger: log, HTTPClient: hc,
		HeartbeatInterval: o.HeartbeatInterval, Grace: o.HeartbeatGrace, ScionBinary: self, PortRange: o.PortRange,
		Capabilities:  passthroughCapabilities(s.Server.Broker.AllowPassthrough),
		GitWorkspaces: gitWS,
		DefaultImage:  defaultImage,
		Jobs:          brokerJobs(f, s.Server.Broker.Profiles, ambient, ambientNS)})
	if err != nil {
		return err
	}
	log.Info("runtime broker starting", "name", conn.BrokerName, "broker_id", conn.BrokerID, "hub", ep, "runtime", rt.Name())
	return b.Run(ctx)
}

// brokerInstances hosts server.broker.instances, and nothing else, until
// ctx ends: each instance with the credentials saved for it by
// `scion runtime-broker register --instance <key>`. An entry that does
// not validate refuses the start; so does having no instance that can
// serve.
func brokerInstances(ctx context.Context, s *config.Settings, creds *config.BrokerCredentials, o config.BrokerOptions, log *slog.Logger) error {
	ins, targets, err := parseInstances(s)
	if err != nil {
		return err
	}
	// A flat instance has no profile: the fleet file alone.
	f, err := loadFleet(o.Clusters)
	if err != nil {
		return err
	}
	if len(ins) == 0 {
		return fmt.Errorf("server.broker.instances is empty: add an instance, or remove the key to run a regular runtime broker")
	}
	if o.Runtime != "" {
		// Each instance's runtime is its runtime_target's; a --runtime
		// that would be ignored is refused rather than left to surprise.
		return usageErrorf("--runtime %s does not apply with server.broker.instances: each instance runs on its runtime_target (drop --runtime)", o.Runtime)
	}
	ep := s.Server.Broker.HubEndpoint
	conns := make([]*config.BrokerConnection, len(ins))
	for i, in := range ins {
		conns[i] = creds.ForInstance(ep, in.Key)
	}
	gitWS, err := gitWorkspaces(s, false)
	if err != nil {
		return err
	}
	h := &instanceHost{settings: s, hub: ep, version: o.Version, heartbeat: o.HeartbeatInterval, grace: o.HeartbeatGrace,
		portRange: o.PortRange, dataDir: brokerDataDir(s), gitWorkspaces: gitWS, log: log,
		runtime: instanceRuntimeFor, fleet: f}
	return h.serve(ctx, ins, targets, conns)
}

// gitWorkspaces is the broker's workspace settings: the roots local git
// remotes may be under (server.broker.allow_local_git_remotes; absent
// means the user's home on a workstation, none on a team broker), never
// inside the Scion home (the data directory is refused by the broker).
// With server.workspace_storage on nfs, the first share holds the
// shared-workspace checkouts (its marker is checked when the broker
// reports its storage, not here: an export mounted late is reported
// unhealthy until it is there).
func gitWorkspaces(s *config.Settings, workstation bool) (workspace.GitConfig, error) {
	cfg := workspace.GitConfig{
		LocalRemoteRoots: config.LocalGitRemoteRoots(s.Server.Broker.AllowLocalGitRemotes, workstation),
		LocalRemoteDeny:  []string{config.Home()},
	}
	share, err := s.Server.WorkspaceStorage.Resolve()
	if err != nil || share == nil {
		return cfg, err
	}
	cfg.Export = &workspace.Export{Root: share.Root(), Storage: workspace.Storage{
		Type: workspace.StorageNFS, Server: share.Server, Export: share.Export, SubpathRoot: share.SubpathRoot, PVName: share.PVName}}
	return cfg, nil
}

// brokerDataDir is server.broker.data_dir, or <home>/broker.
func brokerDataDir(s *config.Settings) string {
	return cmp.Or(s.Server.Broker.DataDir, config.Path("broker"))
}

// refusalList is "key: reason; ..." in config order.
func refusalList(ins []config.Instance, refused map[string]error) string {
	var parts []string
	for _, in := range ins {
		if err := refused[in.Key]; err != nil {
			parts = append(parts, in.Key+": "+err.Error())
		}
	}
	return strings.Join(parts, "; ")
}
