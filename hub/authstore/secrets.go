package authstore

import (
	"context"
	"slices"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// secretSubject is the secrets of project projectID ("" hub-wide).
func (s *Store) secretSubject(ctx context.Context, projectID, name string) (Subject, error) {
	subj := Subject{Res: authz.Resource{Secret: &authz.SecretRes{Name: name}}}
	if projectID == "" {
		return subj, nil
	}
	p, err := s.project(ctx, projectID)
	subj.Res.Project = p
	return subj, err
}

func (s *Store) decideSecret(ctx context.Context, m, projectID, name string) (*actor, error) {
	a, err := actorOf(ctx)
	if err != nil || a.system {
		return a, err
	}
	subj, err := s.secretSubject(ctx, projectID, name)
	if err != nil {
		return a, err
	}
	return a, verdict(Decide(m, a.caller, subj))
}

func (s *Store) PutSecret(ctx context.Context, x *store.Secret) error {
	if _, err := s.decideSecret(ctx, "PutSecret", x.ProjectID, x.Name); err != nil {
		return err
	}
	return s.inner.PutSecret(ctx, x)
}

// GetSecret returns a secret with its value only as naming it in an
// agent create allows (authz.SecretUse): an agent hands on only what it
// was given (HeldBy its record, as its request read it).
func (s *Store) GetSecret(ctx context.Context, projectID, name string) (*store.Secret, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	x, err := s.inner.GetSecret(ctx, projectID, name)
	if err != nil || a.system {
		return x, err
	}
	subj, err := s.secretSubject(ctx, x.ProjectID, x.Name)
	if err != nil {
		return nil, err
	}
	if a.caller.Kind == authz.Agent {
		holder, ok := a.seen.agent(a.caller.ID)
		if !ok {
			h, err := s.inner.GetAgent(ctx, a.caller.ID)
			if err != nil {
				return nil, err
			}
			a.seen.sawAgent(h, false)
			holder, _ = a.seen.agent(a.caller.ID)
		}
		subj.Res.Secret.Held = held(holder, x)
	}
	if err := verdict(Decide("GetSecret", a.caller, subj)); err != nil {
		return nil, err
	}
	return x, nil
}

// ListSecrets lists a project's (or the hub-wide) secrets for
// secret.read there, else none.
func (s *Store) ListSecrets(ctx context.Context, projectID string) ([]*store.Secret, error) {
	if _, err := s.decideSecret(ctx, "ListSecrets", projectID, ""); err != nil {
		return nil, ignoreHidden(err)
	}
	return s.inner.ListSecrets(ctx, projectID)
}

func (s *Store) DeleteSecret(ctx context.Context, projectID, name string) error {
	if _, err := s.decideSecret(ctx, "DeleteSecret", projectID, name); err != nil {
		return err
	}
	return s.inner.DeleteSecret(ctx, projectID, name)
}

// HeldBy reports whether agent holder was given secret x. Its record
// names secrets, and a name means the project's secret when there is
// one, else the hub-wide one: a project secret set after holder was
// created is not the one it got under that name (that was the hub-wide
// one, or none), so it is not held.
func HeldBy(holder *store.Agent, x *store.Secret) bool {
	if holder == nil {
		return false
	}
	return held(agentSeen{secretNames: holder.SecretNames, createdAt: holder.CreatedAt}, x)
}

func held(holder agentSeen, x *store.Secret) bool {
	if !slices.Contains(holder.secretNames, x.Name) {
		return false
	}
	return x.ProjectID == "" || !x.CreatedAt.After(holder.createdAt)
}

// Broker-scoped secrets: hub admins manage them; the value is the
// broker's own.

func brokerSecretSubject(brokerID string) Subject {
	return Subject{Res: authz.Resource{Broker: &authz.BrokerRes{ID: brokerID}}}
}

func (s *Store) PutBrokerSecret(ctx context.Context, x *store.BrokerSecret) error {
	if _, err := decide(ctx, "PutBrokerSecret", brokerSecretSubject(x.BrokerID)); err != nil {
		return err
	}
	return s.inner.PutBrokerSecret(ctx, x)
}

// GetBrokerSecret gives the broker its secret; a hub admin gets the
// record without the ciphertext (what it set, never the value).
func (s *Store) GetBrokerSecret(ctx context.Context, brokerID, name string) (*store.BrokerSecret, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	redact := false
	if !a.system && !Allowed("GetBrokerSecret", a.caller, brokerSecretSubject(brokerID)) {
		if err := verdict(Decide("GetBrokerSecret.metadata", a.caller, brokerSecretSubject(brokerID))); err != nil {
			return nil, err
		}
		redact = true
	}
	x, err := s.inner.GetBrokerSecret(ctx, brokerID, name)
	if err != nil || !redact {
		return x, err
	}
	c := *x
	c.Ciphertext = nil
	return &c, nil
}

func (s *Store) ListBrokerSecrets(ctx context.Context, brokerID string) ([]*store.BrokerSecret, error) {
	if _, err := decide(ctx, "ListBrokerSecrets", brokerSecretSubject(brokerID)); err != nil {
		return nil, ignoreHidden(err)
	}
	return s.inner.ListBrokerSecrets(ctx, brokerID)
}

func (s *Store) DeleteBrokerSecret(ctx context.Context, brokerID, name string) error {
	if _, err := decide(ctx, "DeleteBrokerSecret", brokerSecretSubject(brokerID)); err != nil {
		return err
	}
	return s.inner.DeleteBrokerSecret(ctx, brokerID, name)
}
