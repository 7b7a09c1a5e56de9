package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/runtime/process"
)

const workstationBrokerName = "local"

// startWorkstation prepares the in-process broker of a workstation Hub.
// The broker keeps its identity across restarts (its connection is stored
// in broker-credentials.yaml under the workstation URL), so agents are
// never orphaned by a new broker ID.
func startWorkstation(ctx context.Context, srv *hub.Server, url string, f *serverFlags, log *slog.Logger) (*broker.Broker, error) {
	token, err := srv.BootstrapAdmin(ctx)
	if err != nil {
		return nil, fmt.Errorf("bootstrap admin: %w", err)
	}
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		return nil, err
	}
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
	rt, err := newRuntime(f.runtime, dataDir, log)
	if err != nil {
		return nil, err
	}
	self, _ := os.Executable()
	b, err := broker.New(broker.Config{HubEndpoint: url, BrokerID: conn.BrokerID, Name: conn.BrokerName,
		Secret: []byte(conn.Secret), Runtime: rt, DataDir: dataDir, Version: Version, Logger: log,
		HeartbeatInterval: f.heartbeat, Grace: f.grace, ScionBinary: self})
	if err != nil {
		return nil, err
	}
	ws := &config.Workstation{URL: url, AdminToken: token, BrokerID: conn.BrokerID, PID: os.Getpid()}
	if err := ws.Save(); err != nil {
		return nil, err
	}
	return b, nil
}

// newRuntime builds the runtime a broker drives. Docker arrives with its
// own issue; until then the process runtime is the default.
func newRuntime(kind, dataDir string, log *slog.Logger) (runtime.Runtime, error) {
	switch kind {
	case "", "process":
		if kind == "" {
			log.Info("using the process runtime: agents run as unsandboxed local processes")
		}
		return process.New(filepath.Join(dataDir, "process"))
	case "fake":
		return fake.New(), nil
	}
	return nil, usageErrorf("unknown runtime %q: use process or fake", kind)
}
