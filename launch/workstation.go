package launch

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
)

const workstationBrokerName = "local"

// startWorkstation prepares the in-process broker of a workstation Hub.
// The broker keeps its identity across restarts (its connection is stored
// in broker-credentials.yaml under the workstation URL), so agents are
// never orphaned by a new broker ID.
//
// With server.broker.instances the workstation runs those instead, each
// registered through the Hub (see workstationInstances). run serves the
// broker or the instances until its context ends.
func startWorkstation(ctx context.Context, srv *hub.Server, url string, f *config.ServerOptions, log *slog.Logger) (run func(context.Context), err error) {
	token, err := srv.BootstrapAdmin(ctx)
	if err != nil {
		return nil, fmt.Errorf("bootstrap admin: %w", err)
	}
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		return nil, err
	}
	settings, err := config.LoadSettings()
	if err != nil {
		return nil, err
	}
	if settings.Server.Broker.Instances.Configured() {
		w, err := startWorkstationInstances(ctx, srv, url, f, settings, creds, log)
		if err != nil {
			return nil, err
		}
		if err := workstationFile(url, token).Save(); err != nil {
			return nil, err
		}
		return w.run, nil
	}
	b, err := startLocalBroker(ctx, srv, url, token, f, settings, creds, log)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) { _ = b.Run(ctx) }, nil
}

// startLocalBroker prepares the workstation's regular "local" broker.
func startLocalBroker(ctx context.Context, srv *hub.Server, url, token string, f *config.ServerOptions, settings *config.Settings, creds *config.BrokerCredentials, log *slog.Logger) (*broker.Broker, error) {
	conn := creds.ForHub(url)
	if conn != nil {
		ok, err := srv.BrokerExists(ctx, conn.BrokerID)
		if err != nil {
			return nil, err
		}
		if !ok {
			conn = nil // the database was reset: register afresh
		}
	}
	if conn == nil {
		bc, err := srv.RegisterBroker(ctx, workstationBrokerName, hub.BootstrapAdminID, true)
		if err != nil {
			return nil, fmt.Errorf("register the local broker: %w", err)
		}
		conn = &config.BrokerConnection{Name: bc.Name, HubEndpoint: url, BrokerID: bc.BrokerID, BrokerName: bc.Name, Secret: bc.Secret}
		creds.Put(conn)
		if err := creds.Save(); err != nil {
			return nil, err
		}
	}
	if _, err := srv.EnsureProject(ctx, "default", conn.BrokerID); err != nil {
		return nil, fmt.Errorf("default project: %w", err)
	}
	dataDir := config.Path("broker")
	rt, agentHub, err := newRuntime(ctx, runtimeChoice{Kind: f.Runtime, BrokerID: conn.BrokerID, DataDir: dataDir, HubEndpoint: url}, log)
	if err != nil {
		return nil, err
	}
	if rt.Name() == "docker" {
		// No registry: the demo image is built locally, once, and is the
		// workstation's default image unless one was set.
		img, err := ensureDemoImage(ctx, log)
		if err == nil {
			err = srv.EnsureDefaultImage(ctx, func() (string, error) { return img, nil })
		}
		if err != nil {
			return nil, fmt.Errorf("demo image: %w", err)
		}
	}
	self, _ := os.Executable()
	profiles, err := brokerProfiles(settings.Server.Broker.Profiles)
	if err != nil {
		return nil, err
	}
	gitWS, err := gitWorkspaces(settings, true)
	if err != nil {
		return nil, err
	}
	b, err := broker.New(broker.Config{Profiles: profiles, AgentHubEndpoint: cmp.Or(settings.Server.Broker.AgentHubEndpoint, agentHub), HubEndpoint: url, BrokerID: conn.BrokerID, Name: conn.BrokerName,
		Secret: []byte(conn.Secret), Runtime: rt, DataDir: dataDir, Version: f.Version, Logger: log,
		HeartbeatInterval: f.HeartbeatInterval, Grace: f.HeartbeatGrace, ScionBinary: self,
		Capabilities: passthroughCapabilities(settings.Server.Broker.AllowPassthrough),
		// A workstation serves the host's own user, who may read the
		// host's repositories anyway: local remotes are its common case,
		// under the user's home unless settings.yaml says otherwise.
		GitWorkspaces: gitWS})
	if err != nil {
		return nil, err
	}
	ws := &config.Workstation{URL: url, AdminToken: token, BrokerID: conn.BrokerID, PID: os.Getpid()}
	if err := ws.Save(); err != nil {
		return nil, err
	}
	return b, nil
}
