package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/spoke/fleet"
)

// Broker runs `scion runtime-broker start` until ctx ends or SIGINT or
// SIGTERM arrives: the broker takes its Hub from
// server.broker.hub_endpoint and its credentials from the stored
// connection for that Hub, builds its runtime and keeps the control
// channel open. Every other Hub with a stored connection (register or
// join against it) gets a broker of its own in this process: its own
// channel, credentials, transport auth, heartbeats and reconnects, its
// own runtime view (its broker ID's agents only), data directory
// (<data_dir>/hubs/<broker ID>) and an equal part of the port range; the
// process then refuses agents of the global project.
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
	// One control channel per stored Hub connection: the one for
	// server.broker.hub_endpoint first, then every other Hub's (register
	// and join against another Hub add one).
	conns := append([]*config.BrokerConnection{conn}, otherHubs(creds, ep)...)
	dataDir := s.Server.Broker.DataDir
	if dataDir == "" {
		dataDir = config.Path("broker")
	}
	rtKind := cmp.Or(o.Runtime, s.Server.Broker.Runtime)
	var defaultImage string
	var ranges [][2]int
	if len(conns) == 1 {
		ranges = [][2]int{o.PortRange}
	} else if ranges, err = splitPortRange(cmp.Or(o.PortRange, broker.DefaultPortRange), len(conns)); err != nil {
		return err
	}
	var brokers []*broker.Broker
	for i, c := range conns {
		dir := dataDir
		if i > 0 {
			// Each Hub's broker keeps its own agents' directories and
			// records: an agent of one Hub is nothing to another.
			dir = filepath.Join(dataDir, "hubs", c.BrokerID)
		}
		rt, agentHub, err := newRuntime(parent, runtimeChoice{Kind: rtKind, BrokerID: c.BrokerID, DataDir: dir, HubEndpoint: c.HubEndpoint}, log)
		if err != nil {
			return fmt.Errorf("connection %s (%s): %w", c.Name, c.HubEndpoint, err)
		}
		defer rt.Close()
		if i == 0 && rt.Name() == "docker" {
			// Like the workstation: no registry, so the demo image is
			// built locally (once) and runs agents that name no image,
			// and a team's first `scion start` works out of the box.
			if defaultImage, err = ensureDemoImage(parent, log); err != nil {
				log.Warn("the demo image could not be built; agents without an image are refused until the Hub has a default image (scion hub settings set --default-image)", "err", err)
			}
		}
		b, err := regularBroker(s, o, c, rt, agentHub, defaultImage, dir, ranges[i], len(conns), f, log)
		if err != nil {
			return fmt.Errorf("connection %s (%s): %w", c.Name, c.HubEndpoint, err)
		}
		log.Info("runtime broker starting", "name", c.BrokerName, "broker_id", c.BrokerID, "hub", c.HubEndpoint, "runtime", rt.Name())
		brokers = append(brokers, b)
	}
	if len(brokers) == 1 {
		return brokers[0].Run(ctx)
	}
	// Each Hub's channel lives on its own: one Hub unreachable, or its
	// broker record gone, leaves the others served.
	var wg sync.WaitGroup
	errs := make([]error, len(brokers))
	for i, b := range brokers {
		wg.Go(func() {
			if errs[i] = b.Run(ctx); errs[i] != nil && ctx.Err() == nil {
				log.Error("broker stopped serving its Hub", "hub", conns[i].HubEndpoint, "broker_id", conns[i].BrokerID, "err", errs[i])
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(errs...)
}

// otherHubs are the stored connections of the regular broker (not a
// flat instance's) to Hubs other than ep, in the file's order.
func otherHubs(creds *config.BrokerCredentials, ep string) []*config.BrokerConnection {
	var out []*config.BrokerConnection
	for _, c := range creds.Connections {
		if c.Instance == "" && strings.TrimRight(c.HubEndpoint, "/") != strings.TrimRight(ep, "/") {
			out = append(out, c)
		}
	}
	return out
}

// regularBroker is the broker of one Hub connection on runtime rt, with
// the process's settings; hubs is how many Hubs the process serves.
func regularBroker(s *config.Settings, o config.BrokerOptions, conn *config.BrokerConnection, rt runtime.Runtime, agentHub, defaultImage, dataDir string,
	ports [2]int, hubs int, f *fleet.Fleet, log *slog.Logger) (*broker.Broker, error) {
	self, _ := os.Executable()
	profiles, err := brokerProfiles(s.Server.Broker.Profiles)
	if err != nil {
		return nil, err
	}
	var ambient *rest.Config
	var ambientNS string
	if rt.Name() == config.RuntimeKubernetes {
		ambient, ambientNS = ambientCluster(s, "", "", log)
	}
	gitWS, err := gitWorkspaces(s, false)
	if err != nil {
		return nil, err
	}
	hc, err := hubHTTPClient(conn, conn.HubEndpoint)
	if err != nil {
		return nil, err
	}
	shared, err := sharedDirExport(s, log)
	if err != nil {
		return nil, err
	}
	// server.broker.agent_hub_endpoint, when set, wins over the
	// runtime's own choice (the Docker forwarder's address); it names
	// the first Hub's address, so the others' agents get their own.
	agentHubEndpoint := agentHub
	if hubs == 1 || conn.HubEndpoint == s.Server.Broker.HubEndpoint {
		agentHubEndpoint = cmp.Or(s.Server.Broker.AgentHubEndpoint, agentHub)
	}
	return broker.New(broker.Config{Profiles: profiles, AgentHubEndpoint: agentHubEndpoint, HubEndpoint: conn.HubEndpoint, BrokerID: conn.BrokerID, Name: conn.BrokerName,
		Secret: []byte(conn.Secret), Runtime: rt, DataDir: dataDir, Version: o.Version, Logger: log.With("hub", conn.HubEndpoint), HTTPClient: hc, HubConnections: hubs, SharedDirs: shared,
		HeartbeatInterval: o.HeartbeatInterval, Grace: o.HeartbeatGrace, ScionBinary: self, PortRange: ports,
		Capabilities:  passthroughCapabilities(s.Server.Broker.AllowPassthrough),
		GitWorkspaces: gitWS,
		DefaultImage:  defaultImage,
		Jobs:          brokerJobs(f, s.Server.Broker.Profiles, ambient, ambientNS)})
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

// sharedDirExport is server.shared_dir_storage's export (nil: local
// shared directories). Its identity marker (the workspace export's,
// .scion-export-id) is written now if missing, so that brokers that mount
// the export find it and a broker whose mount went away makes nothing in
// its place: a failure to mark is logged, and creates then refuse.
func sharedDirExport(s *config.Settings, log *slog.Logger) (*workspace.Export, error) {
	share, err := s.Server.SharedDirStorage.ResolveKey("server.shared_dir_storage")
	if err != nil || share == nil {
		return nil, err
	}
	e := &workspace.Export{Root: share.Root(), Storage: workspace.Storage{
		Type: workspace.StorageNFS, Server: share.Server, Export: share.Export, SubpathRoot: share.SubpathRoot, PVName: share.PVName}}
	if id, err := e.Identify(); err != nil {
		log.Warn("server.shared_dir_storage: the export is not usable; agents are refused until it is", "root", e.Root, "err", err)
	} else {
		log.Info("projects' shared directories on the export", "root", e.Root, "export_id", id)
	}
	return e, nil
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
