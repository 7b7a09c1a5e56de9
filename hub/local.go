package hub

import (
	"context"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/store"
)

// The methods of this file and identity.go are the process's that runs
// the Hub (launch, test harnesses), not a request's: they run as the
// system (hub/authstore).

// RegisterBroker registers a broker directly (the workstation's own broker
// and test harnesses; remote brokers use the register/join routes).
func (s *Server) RegisterBroker(ctx context.Context, name, createdBy string, autoProvide bool) (api.BrokerCredentials, error) {
	return s.issueBroker(authstore.AsSystem(ctx), name, createdBy, autoProvide, nil, nil)
}

// RegisterFlatBroker registers a flat Runtime Broker instance serving
// target (the workstation's in-process registration of its
// server.broker.instances). It is refused, writing nothing, for an
// incomplete target (400 invalid_request) and, while the
// hub.flat_runtime_brokers experiment is off, with 409
// experiment_disabled. maxAgents, when set, is the instance's own limit
// (nil inherits the hub-wide default, 0 is unlimited).
func (s *Server) RegisterFlatBroker(ctx context.Context, name, createdBy string, autoProvide bool, target api.RuntimeTarget, maxAgents *int) (api.BrokerCredentials, error) {
	return s.issueBroker(authstore.AsSystem(ctx), name, createdBy, autoProvide, &target, maxAgents)
}

// BrokerExists reports whether a broker ID is registered.
func (s *Server) BrokerExists(ctx context.Context, id string) (bool, error) {
	_, err := s.store.GetBroker(authstore.AsSystem(ctx), id)
	if isNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// EnsureProject creates a project if it does not exist and links brokerID
// as a provider (when given). It returns the project ID.
func (s *Server) EnsureProject(ctx context.Context, name, brokerID string) (string, error) {
	ctx = authstore.AsSystem(ctx)
	p, err := s.store.GetProject(ctx, name)
	if isNotFound(err) {
		now := time.Now().UTC()
		p = &store.Project{ID: httpapi.NewID(), Name: name, SharingMode: api.SharingEmptyPerAgent, CreatedAt: now, UpdatedAt: now}
		err = s.store.CreateProject(ctx, p)
		if isExists(err) {
			p, err = s.store.GetProject(ctx, name)
		}
	}
	if err != nil {
		return "", err
	}
	if brokerID != "" {
		if err := s.store.LinkProvider(ctx, p.ID, brokerID); err != nil {
			return "", err
		}
	}
	return p.ID, nil
}

// EnsureDefaultImage sets Agent Defaults' default_image when it is unset,
// with the image build returns (called only then).
func (s *Server) EnsureDefaultImage(ctx context.Context, build func() (string, error)) error {
	ctx = authstore.AsSystem(ctx)
	cur, err := s.settings.Hub(ctx)
	if err != nil || cur.AgentDefaults.DefaultImage != "" {
		return err
	}
	img, err := build()
	if err != nil {
		return err
	}
	// build may take long: it runs outside the settings lock, and the
	// image is set only if no one set one meanwhile.
	return s.settings.Update(ctx, func(v *api.HubSettings) (bool, error) {
		if v.AgentDefaults.DefaultImage != "" {
			return false, nil
		}
		v.AgentDefaults.DefaultImage = img
		return true, nil
	})
}
