package testenv

import (
	"context"
	"path/filepath"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/runtime/fake"
)

// AddFlatBroker registers a flat Runtime Broker instance serving target
// through the Hub's in-process registration (hub.RegisterFlatBroker; the
// hub.flat_runtime_brokers experiment must be on), with maxAgents as its
// own limit when set, starts it with the fake runtime declaring target in
// its hello, and returns once it is online. It provides for the "default"
// project.
func (e *Env) AddFlatBroker(name string, target api.RuntimeTarget, maxAgents *int) *Broker {
	e.T.Helper()
	ctx := context.Background()
	creds, err := e.Hub.RegisterFlatBroker(ctx, name, hub.BootstrapAdminID, false, target, maxAgents)
	if err != nil {
		e.T.Fatalf("testenv: register flat %s: %v", name, err)
	}
	b := e.NewBroker(creds.BrokerID, name, creds.Secret)
	b.RuntimeTarget = &target
	e.StartBroker(b, fake.New())
	if _, err := e.Admin.ProvideProject(ctx, b.ID, "default"); err != nil {
		e.T.Fatalf("testenv: provide: %v", err)
	}
	return b
}

// NewBroker is a broker under credentials the Hub issued, not started
// yet: set its fields (RuntimeTarget), then StartBroker or LaunchBroker.
// Env.Close stops it.
func (e *Env) NewBroker(id, name, secret string) *Broker {
	e.T.Helper()
	b := &Broker{ID: id, Name: name, Secret: secret, DataDir: filepath.Join(tempDir(e.T), name)}
	if e.opts.Jobs {
		b.Spoke = newJobSpoke()
	}
	e.NeverLogged(secret)
	e.mu.Lock()
	e.brokers = append(e.brokers, b)
	e.mu.Unlock()
	return b
}
