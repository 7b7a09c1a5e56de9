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
	log := newLogger(o.LogLevel, o.LogFormat)
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
	ws, err := config.LoadWorkstation()
	if err != nil {
		return err
	}
	conns := append([]*config.BrokerConnection{conn}, otherHubs(creds, conn, ws, log)...)
	dataDir := brokerDataDir(s)
	// One export check for every Hub's broker.
	shared, err := sharedDirExport(s, log)
	if err != nil {
		return err
	}
	rtKind := cmp.Or(o.Runtime, s.Server.Broker.Runtime)
	var defaultImage string
	var ranges [][2]int
	if len(conns) == 1 {
		ranges = [][2]int{o.PortRange}
	} else if ranges, err = splitPortRange(cmp.Or(o.PortRange, broker.DefaultPortRange), len(conns)); err != nil {
		return err
	}
	var cfgs []broker.Config
	var served []*config.BrokerConnection
	for i, c := range conns {
		dir := dataDir
		if i > 0 {
			// Each Hub's broker keeps its own agents' directories and
			// records: an agent of one Hub is nothing to another.
			dir = filepath.Join(dataDir, "hubs", c.BrokerID)
		}
		cfg, err := func() (broker.Config, error) {
			rt, agentHub, err := newRuntime(parent, runtimeChoice{Kind: rtKind, BrokerID: c.BrokerID, DataDir: dir, HubEndpoint: c.HubEndpoint}, log)
			if err != nil {
				return broker.Config{}, err
			}
			if i == 0 && rt.Name() == "docker" {
				// Like the workstation: no registry, so the demo image is
				// built locally (once) and runs agents that name no image,
				// and a team's first `scion start` works out of the box.
				if defaultImage, err = ensureDemoImage(parent, log); err != nil {
					log.Warn("the demo image could not be built; agents without an image are refused until the Hub has a default image (scion hub settings set --default-image)", "err", err)
				}
			}
			cfg, err := regularBroker(s, o, c, rt, agentHub, defaultImage, dir, ranges[i], i == 0, f, log)
			cfg.SharedDirs = shared
			if err != nil {
				_ = rt.Close()
			}
			return cfg, err
		}()
		switch {
		case err != nil && i == 0:
			return fmt.Errorf("connection %s (%s): %w", c.Name, c.HubEndpoint, err)
		case err != nil:
			// Another Hub's connection that cannot be set up (its
			// transport settings, its runtime) is not served; the others
			// are.
			log.Error("hub connection not served", "connection", c.Name, "hub", c.HubEndpoint, "err", err)
			continue
		}
		defer cfg.Runtime.Close()
		cfgs, served = append(cfgs, cfg), append(served, c)
	}
	brokers := make([]*broker.Broker, len(cfgs))
	for i := range cfgs {
		cfgs[i].HubConnections = len(cfgs)
		if brokers[i], err = broker.New(cfgs[i]); err != nil {
			return fmt.Errorf("connection %s (%s): %w", served[i].Name, served[i].HubEndpoint, err)
		}
		log.Info("runtime broker starting", "name", served[i].BrokerName, "broker_id", served[i].BrokerID, "hub", served[i].HubEndpoint, "runtime", cfgs[i].Runtime.Name())
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
				log.Error("broker stopped serving its Hub", "hub", served[i].HubEndpoint, "broker_id", served[i].BrokerID, "err", errs[i])
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
// flat instance's) to Hubs other than first's, in the file's order. Left
// out, with a warning: the workstation's own broker connection (its Hub
// process serves it), a connection with first's or an earlier one's
// broker ID, and one whose broker ID is not a plain name (it names a data
// directory).
func otherHubs(creds *config.BrokerCredentials, first *config.BrokerConnection, ws *config.Workstation, log *slog.Logger) []*config.BrokerConnection {
	seen := map[string]bool{first.BrokerID: true}
	var out []*config.BrokerConnection
	for _, c := range creds.Connections {
		switch {
		case c.Instance != "" || c == first || config.SameHub(c.HubEndpoint, first.HubEndpoint):
		case ws != nil && config.SameHub(c.HubEndpoint, ws.URL):
			log.Info("hub connection left to the workstation's own broker", "connection", c.Name, "hub", c.HubEndpoint)
		case workspace.ValidID("broker ID", c.BrokerID) != nil:
			log.Warn("hub connection not served: its broker ID is not a plain name", "connection", c.Name, "hub", c.HubEndpoint)
		case seen[c.BrokerID]:
			log.Warn("hub connection not served: another connection has its broker ID", "connection", c.Name, "hub", c.HubEndpoint, "broker_id", c.BrokerID)
		default:
			seen[c.BrokerID] = true
			out = append(out, c)
		}
	}
	return out
}

// regularBroker is the broker configuration of one Hub connection on
// runtime rt, with the process's settings; first: the connection of
// server.broker.hub_endpoint. The caller sets HubConnections.
func regularBroker(s *config.Settings, o config.BrokerOptions, conn *config.BrokerConnection, rt runtime.Runtime, agentHub, defaultImage, dataDir string,
	ports [2]int, first bool, f *fleet.Fleet, log *slog.Logger) (broker.Config, error) {
	self, _ := os.Executable()
	profiles, err := brokerProfiles(s.Server.Broker.Profiles)
	if err != nil {
		return broker.Config{}, err
	}
	var ambient *rest.Config
	var ambientNS string
	if rt.Name() == config.RuntimeKubernetes {
		ambient, ambientNS = ambientCluster(s, "", "", log)
	}
	gitWS, err := gitWorkspaces(s, false)
	if err != nil {
		return broker.Config{}, err
	}
	hc, err := hubHTTPClient(conn, conn.HubEndpoint)
	if err != nil {
		return broker.Config{}, err
	}
	agentCA, err := agentHubCA(conn, dataDir)
	if err != nil {
		return broker.Config{}, err
	}
	// server.broker.agent_hub_endpoint, when set, wins over the
	// runtime's own choice (the Docker forwarder's address); it names
	// the first Hub's address, so the others' agents get their own.
	agentHubEndpoint := agentHub
	if first {
		agentHubEndpoint = cmp.Or(s.Server.Broker.AgentHubEndpoint, agentHub)
	}
	return broker.Config{Profiles: profiles, AgentHubEndpoint: agentHubEndpoint, HubEndpoint: conn.HubEndpoint, BrokerID: conn.BrokerID, Name: conn.BrokerName,
		Secret: []byte(conn.Secret), Runtime: rt, DataDir: dataDir, Version: o.Version, Logger: log.With("hub", conn.HubEndpoint), HTTPClient: hc, AgentHubCA: agentCA,
		HeartbeatInterval: o.HeartbeatInterval, Grace: o.HeartbeatGrace, ScionBinary: self, PortRange: ports,
		Capabilities:  passthroughCapabilities(s.Server.Broker.AllowPassthrough),
		GitWorkspaces: gitWS,
		DefaultImage:  defaultImage,
		Jobs:          brokerJobs(f, s.Server.Broker.Profiles, ambient, ambientNS)}, nil
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
	shared, err := sharedDirExport(s, log)
	if err != nil {
		return err
	}
	h := &instanceHost{settings: s, hub: ep, version: o.Version, heartbeat: o.HeartbeatInterval, grace: o.HeartbeatGrace,
		portRange: o.PortRange, dataDir: brokerDataDir(s), gitWorkspaces: gitWS, sharedDirs: shared, log: log,
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
