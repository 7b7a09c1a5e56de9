// Broker-scoped secrets (ADR-0046 §2): a spoke's kubeconfig or a bastion
// key, set by a hub admin for one broker and delivered to that broker
// only, over its signed request. They live in their own table, which
// agentSecrets never reads, so no agent create can name one, and they
// are sealed under a scope of their own ("broker:<id>"), so a ciphertext
// copied into the project secrets table does not open there.
//
// Who may: PUT, GET (list of names) and DELETE need a hub admin
// (secret.write hub-wide; the list too, since names of a broker's
// credentials are an admin's business). The value route takes no bearer
// token at all: only the signed headers of the very broker the secret is
// scoped to (a user token, another broker's signature, a replayed nonce
// are 401, another broker's secret 404).

package hub

import (
	"fmt"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

// brokerSecretScope is the sealing scope of broker brokerID's secrets: not
// a project ID (those are UUIDs), so the two kinds never open as each
// other.
func brokerSecretScope(brokerID string) string { return "broker:" + brokerID }

func brokerSecretView(x *store.BrokerSecret) api.BrokerSecret {
	return api.BrokerSecret{BrokerID: x.BrokerID, Name: x.Name, CreatedBy: x.CreatedBy, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
}

// brokerSecretTarget checks that c may manage broker secrets (a hub
// admin) and resolves {broker}.
func (s *Server) brokerSecretTarget(r *http.Request, c *Caller) (*store.Broker, error) {
	ctx := r.Context()
	if s.secrets == nil {
		httpapi.MarkChecked(ctx)
		return nil, errNoSecretsKey()
	}
	if err := httpapi.Authorize(ctx, s.log, c, authz.SecretWrite, authz.Resource{}, nil); err != nil {
		return nil, api.Forbidden("broker-scoped secrets need the hub admin role")
	}
	ref := r.PathValue("broker")
	b, err := s.store.GetBroker(ctx, ref)
	if err != nil {
		return nil, storeerr.Map(err, api.CodeBrokerNotFound, "runtime broker "+api.Quote(ref))
	}
	return b, nil
}

func (s *Server) handlePutBrokerSecret(r *http.Request, c *Caller) (int, any, error) {
	b, err := s.brokerSecretTarget(r, c)
	if err != nil {
		return 0, nil, err
	}
	name := r.PathValue("name")
	if err := api.CheckSecretName(name); err != nil {
		return 0, nil, err
	}
	var req api.PutSecretRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Value == "" || len(req.Value) > api.MaxSecretValue {
		return 0, nil, api.BadRequest("a secret value must have 1 to %d bytes", api.MaxSecretValue)
	}
	x := &store.BrokerSecret{BrokerID: b.ID, Name: name, Ciphertext: s.secrets.Seal(brokerSecretScope(b.ID), name, []byte(req.Value)),
		CreatedBy: c.Principal(), CreatedAt: time.Now().UTC()}
	if err := s.store.PutBrokerSecret(r.Context(), x); err != nil {
		return 0, nil, storeerr.Map(err, api.CodeBrokerNotFound, "runtime broker")
	}
	if got, err := s.store.GetBrokerSecret(r.Context(), b.ID, name); err == nil {
		x = got // CreatedAt/CreatedBy as kept by a replace
	}
	s.log.Info("broker secret set", "secret", name, "broker", b.Name, "broker_id", b.ID, "by", c.Principal())
	return http.StatusOK, brokerSecretView(x), nil
}

func (s *Server) handleListBrokerSecrets(r *http.Request, c *Caller) (int, any, error) {
	b, err := s.brokerSecretTarget(r, c)
	if err != nil {
		return 0, nil, err
	}
	xs, err := s.store.ListBrokerSecrets(r.Context(), b.ID)
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.BrokerSecret]{Items: make([]api.BrokerSecret, 0, len(xs)), Total: len(xs)}
	for _, x := range xs {
		out.Items = append(out.Items, brokerSecretView(x))
	}
	return http.StatusOK, out, nil
}

func (s *Server) handleDeleteBrokerSecret(r *http.Request, c *Caller) (int, any, error) {
	b, err := s.brokerSecretTarget(r, c)
	if err != nil {
		return 0, nil, err
	}
	name := r.PathValue("name")
	if err := s.store.DeleteBrokerSecret(r.Context(), b.ID, name); err != nil {
		return 0, nil, storeerr.Map(err, api.CodeSecretNotFound, fmt.Sprintf("secret %s of runtime broker %q", api.Quote(name), b.Name))
	}
	s.log.Info("broker secret deleted", "secret", name, "broker", b.Name, "broker_id", b.ID, "by", c.Principal())
	return http.StatusNoContent, nil, nil
}

// handleBrokerSecretValue is GET
// /runtime-brokers/{broker}/secrets/{name}/value: the one answer with a
// value, for the broker the secret is scoped to, authenticated by its
// signed headers alone (authenticate checks the signature, the window and
// the nonce; a bearer token is refused before it is looked at).
func (s *Server) handleBrokerSecretValue(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" || r.Header.Get(api.HeaderBrokerID) == "" {
		httpapi.WriteError(s.log, w, r, api.Unauthorized("this route takes only the signed headers of the runtime broker the secret is scoped to"))
		return
	}
	c, ok := s.id.AuthenticateLimited(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	notFound := api.NotFound(api.CodeSecretNotFound, "secret %s not found for this runtime broker", api.Quote(name))
	if c.Kind != CallerBroker {
		httpapi.WriteError(s.log, w, r, api.Unauthorized("this route takes only runtime broker credentials"))
		return
	}
	if ref := r.PathValue("broker"); ref != c.ID {
		// Another broker's secrets do not exist for this one.
		s.log.Warn("broker secret refused", "secret", api.Quote(name), "broker_id", c.ID, "asked_for", api.Quote(ref), "reason", "another broker's secret")
		httpapi.WriteError(s.log, w, r, notFound)
		return
	}
	if s.secrets == nil {
		httpapi.WriteError(s.log, w, r, errNoSecretsKey())
		return
	}
	// Read as the broker it authenticated as: the value is its own.
	x, err := s.store.GetBrokerSecret(authstore.WithCaller(r.Context(), *c), c.ID, name)
	if err != nil {
		if isNotFound(err) {
			s.log.Info("broker secret not found", "secret", api.Quote(name), "broker_id", c.ID)
			err = notFound
		}
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	v, err := s.secrets.Open(brokerSecretScope(x.BrokerID), x.Name, x.Ciphertext)
	if err != nil {
		s.log.Error("broker secret does not open with this Hub's secrets key", "secret", x.Name, "broker_id", x.BrokerID)
		httpapi.WriteError(s.log, w, r, api.Errorf(api.CodeInternal, "secret %q cannot be decrypted with this Hub's key", x.Name))
		return
	}
	s.log.Info("broker secret delivered", "secret", x.Name, "broker", c.Name, "broker_id", c.ID)
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, api.BrokerSecretValue{Name: x.Name, Value: string(v)})
}
