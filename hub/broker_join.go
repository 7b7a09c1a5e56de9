// Registration of brokers: by a signed-in user, or by a join token that is
// spent in the transaction that registers the broker.

package hub

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/identity"
	"github.com/scion-go/scion/store"
)

// newBrokerRecord is a new, offline broker with a fresh signing secret,
// and that secret: the record holds it sealed (hub/identity), so
// the broker's credentials are made from the plain one.
// A flat instance's record carries its target (nil for a regular broker).
func (s *Server) newBrokerRecord(name, createdBy string, autoProvide bool, target *api.RuntimeTarget) (*store.Broker, string) {
	now := time.Now().UTC()
	id, secret := httpapi.NewID(), hex.EncodeToString(identity.NewSecret(32))
	if target != nil {
		t := *target
		target = &t
	}
	return &store.Broker{ID: id, Name: name, Status: api.BrokerOffline, Capabilities: []string{}, RuntimeTarget: target,
		AutoProvide: autoProvide, Secret: s.id.SealBrokerSecret(id, []byte(secret)), CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}, secret
}

// issueBroker creates a broker record with a fresh signing secret and
// returns its one-time credentials. target registers a flat instance
// (checkFlatRegistration); maxAgents, when set, is its own limit.
func (s *Server) issueBroker(ctx context.Context, name, createdBy string, autoProvide bool, target *api.RuntimeTarget, maxAgents *int) (api.BrokerCredentials, error) {
	if err := validName("runtime broker", name); err != nil {
		return api.BrokerCredentials{}, err
	}
	if err := checkMaxAgents(maxAgents); err != nil {
		return api.BrokerCredentials{}, err
	}
	if err := s.checkFlatRegistration(ctx, name, target); err != nil {
		return api.BrokerCredentials{}, err
	}
	b, secret := s.newBrokerRecord(name, createdBy, autoProvide, target)
	if maxAgents != nil {
		n := *maxAgents
		b.Settings.MaxAgents = &n
	}
	if err := s.store.CreateBroker(ctx, b); err != nil {
		if isExists(err) {
			return api.BrokerCredentials{}, brokerNameTaken(name, false)
		}
		return api.BrokerCredentials{}, err
	}
	return s.brokerIssued(b, secret), nil
}

func brokerNameTaken(name string, byToken bool) error {
	if byToken {
		return api.Conflict(api.CodeAlreadyExists,
			"a runtime broker named %q is already registered; this join token is for that name, so deregister that broker first (the token stays valid)", name)
	}
	return api.Conflict(api.CodeAlreadyExists,
		"a runtime broker named %q is already registered; deregister it first or choose another --name", name)
}

// brokerIssued logs a new registration and returns its credentials.
func (s *Server) brokerIssued(b *store.Broker, secret string) api.BrokerCredentials {
	s.log.Info("runtime broker registered", "broker", b.Name, "broker_id", b.ID, "by", b.CreatedBy)
	return api.BrokerCredentials{BrokerID: b.ID, Name: b.Name, Secret: secret, HubURL: s.opts.PublicURL}
}

func (s *Server) handleRegisterBroker(r *http.Request, c *Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.BrokerRegister, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.RegisterBrokerRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.JoinToken != "" {
		return 0, nil, api.BadRequest("joinToken belongs to POST /api/v1/runtime-brokers/join")
	}
	if err := req.Validate(); err != nil {
		return 0, nil, err
	}
	creds, err := s.issueBroker(r.Context(), req.Name, c.ID, req.AutoProvide, req.RuntimeTarget, nil)
	return http.StatusCreated, creds, err
}

// maxJoinBody bounds a join request's body.
const maxJoinBody = 64 << 10

// handleJoinBroker registers a broker with a one-time join token instead of
// a user's credentials. It is a public route: the token is the credential.
// A token made for a name registers that name (the request's name, the
// broker's host name by default, is used only when the token names none).
// The token is spent in the transaction that creates the broker, so a
// refused join (a taken name) can be retried with it. A bad token counts
// as a failed authentication of the client's address.
func (s *Server) handleJoinBroker(w http.ResponseWriter, r *http.Request) {
	if s.id.RefuseIfBlocked(w, r) {
		return
	}
	// A join body is a name and a token: bound it well below the API's
	// limit, since anyone may send one.
	r.Body = http.MaxBytesReader(w, r.Body, maxJoinBody)
	httpapi.Serve(s.log, func(r *http.Request, _ *Caller) (int, any, error) {
		var req api.RegisterBrokerRequest
		if err := httpapi.DecodeJSON(r, &req); err != nil {
			return 0, nil, err
		}
		if req.JoinToken == "" {
			s.id.CountAuthFailure(r)
			return 0, nil, api.Unauthorized("a join token is required")
		}
		if err := req.Validate(); err != nil {
			return 0, nil, err
		}
		var name string // the name build chose: the token's, else the request's
		var tokenNamed bool
		var secret string
		// The join token is the credential, checked by the store in the
		// transaction: authentication, so the system's.
		b, err := s.store.JoinBroker(authstore.AsSystem(r.Context()), identity.HashToken(req.JoinToken), s.opts.Now().UTC(), func(jt *store.JoinToken) (*store.Broker, error) {
			name, tokenNamed = cmp.Or(jt.Name, req.Name), jt.Name != ""
			if name == "" {
				return nil, api.BadRequest("this join token names no runtime broker: give the broker a name (--name)")
			}
			if err := validName("runtime broker", name); err != nil {
				return nil, err
			}
			// Checked once the token is: an unauthenticated caller
			// learns nothing about the Hub's experiments. A refusal
			// rolls the token's consumption back.
			if err := s.checkFlatRegistration(r.Context(), name, req.RuntimeTarget); err != nil {
				return nil, err
			}
			var b *store.Broker
			b, secret = s.newBrokerRecord(name, jt.CreatedBy, req.AutoProvide, req.RuntimeTarget)
			return b, nil
		})
		switch {
		case isNotFound(err) || errors.Is(err, store.ErrTokenUsed):
			s.id.CountAuthFailure(r)
			s.log.Warn("join token rejected", "broker", req.Name)
			return 0, nil, api.Unauthorized("invalid, used or expired join token")
		case isExists(err):
			// The token holder was given the token's name with it.
			s.log.Info("join refused: the name is taken; the join token stays valid", "broker", name)
			return 0, nil, brokerNameTaken(name, tokenNamed)
		case err != nil:
			return 0, nil, err
		}
		return http.StatusCreated, s.brokerIssued(b, secret), nil
	})(w, r, nil)
}

func (s *Server) handleCreateJoinToken(r *http.Request, c *Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.JoinTokenCreate, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.CreateJoinTokenRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	// The name is the one the join will register: refuse a bad one now,
	// not when the broker tries to join.
	if req.Name != "" {
		if err := validName("runtime broker", req.Name); err != nil {
			return 0, nil, err
		}
	}
	ttl := time.Hour
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > 30*24*time.Hour {
			return 0, nil, api.BadRequest("ttl must be a positive Go duration up to 720h")
		}
		ttl = d
	}
	tok := "scj_" + hex.EncodeToString(identity.NewSecret(24))
	now := s.opts.Now().UTC()
	jt := &store.JoinToken{Hash: identity.HashToken(tok), Name: req.Name, CreatedBy: c.ID, ExpiresAt: now.Add(ttl), CreatedAt: now}
	if err := s.store.CreateJoinToken(r.Context(), jt); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, api.JoinToken{Token: tok, Name: req.Name, ExpiresAt: jt.ExpiresAt}, nil
}
