// Hub secrets: stored encrypted, referenced by name, never returned or
// logged; their values reach only the broker of an agent that names them.

package hub

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

func secretView(x *store.Secret) api.Secret {
	return api.Secret{Name: x.Name, ProjectID: x.ProjectID, CreatedBy: x.CreatedBy, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
}

func errNoSecretsKey() error {
	return api.Errorf(api.CodeSecretsNotConfigured, "this Hub has no secrets key; start it with --secrets-key-file")
}

// secretScope resolves ?project= (empty: hub-wide) and checks c may do a
// on the secrets there.
func (s *Server) secretScope(r *http.Request, c *Caller, a authz.Action) (string, error) {
	ctx := r.Context()
	if s.secrets == nil {
		httpapi.MarkChecked(ctx)
		return "", errNoSecretsKey()
	}
	ref := r.URL.Query().Get("project")
	if ref == "" {
		return "", httpapi.Authorize(ctx, s.log, c, a, authz.Resource{}, nil)
	}
	p, err := s.loadProject(ctx, c, ref, a)
	if err != nil {
		return "", err
	}
	return p.ID, nil
}

func (s *Server) handlePutSecret(r *http.Request, c *Caller) (int, any, error) {
	projectID, err := s.secretScope(r, c, authz.SecretWrite)
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
	x := &store.Secret{ProjectID: projectID, Name: name, Ciphertext: s.secrets.Seal(projectID, name, []byte(req.Value)),
		CreatedBy: c.Principal(), CreatedAt: time.Now().UTC()}
	if err := s.store.PutSecret(r.Context(), x); err != nil {
		return 0, nil, err
	}
	s.log.Info("secret set", "secret", name, "project", projectID, "by", c.Principal())
	return http.StatusOK, secretView(x), nil
}

func (s *Server) handleListSecrets(r *http.Request, c *Caller) (int, any, error) {
	projectID, err := s.secretScope(r, c, authz.SecretRead)
	if err != nil {
		return 0, nil, err
	}
	xs, err := s.store.ListSecrets(r.Context(), projectID)
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.Secret]{Items: make([]api.Secret, 0, len(xs)), Total: len(xs)}
	for _, x := range xs {
		out.Items = append(out.Items, secretView(x))
	}
	return http.StatusOK, out, nil
}

func (s *Server) handleDeleteSecret(r *http.Request, c *Caller) (int, any, error) {
	projectID, err := s.secretScope(r, c, authz.SecretWrite)
	if err != nil {
		return 0, nil, err
	}
	name := r.PathValue("name")
	if err := s.store.DeleteSecret(r.Context(), projectID, name); err != nil {
		return 0, nil, storeerr.Map(err, api.CodeSecretNotFound, fmt.Sprintf("secret %q", name))
	}
	s.log.Info("secret deleted", "secret", name, "project", projectID, "by", c.Principal())
	return http.StatusNoContent, nil, nil
}

// agentSecrets resolves the secrets a new agent in project p names (the
// project's first, then hub-wide ones) into the values its broker
// delivers. Naming a secret hands its value to the agent, so each needs
// authz.SecretUse: a project secret its project's owner or an admin, and
// an agent creating an agent (holder, its record; nil for other callers)
// may hand on only secrets it was given itself (see heldBy).
func (s *Server) agentSecrets(ctx context.Context, c *Caller, p *store.Project, names []string, holder *store.Agent) (map[string]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if s.secrets == nil {
		return nil, errNoSecretsKey()
	}
	if len(names) > api.MaxAgentSecrets {
		return nil, api.BadRequest("an agent can name at most %d secrets", api.MaxAgentSecrets)
	}
	for _, name := range names {
		if err := api.CheckSecretName(name); err != nil { // nothing by that name can exist
			return nil, err
		}
	}
	out := make(map[string]string, len(names))
	for _, name := range names {
		x, err := s.lookupSecret(ctx, p.ID, name)
		if isNotFound(err) {
			// Asked first as a project secret: an agent learns nothing
			// about the names of secrets it was not given.
			sec := &authz.SecretRes{Name: name, Held: holder != nil && slices.Contains(holder.SecretNames, name)}
			if err := httpapi.Authorize(ctx, s.log, c, authz.SecretUse, authz.Resource{Project: plan.ProjectRes(p), Secret: sec}, nil); err != nil {
				return nil, err
			}
			return nil, api.NotFound(api.CodeSecretNotFound, "secret %q not found in the project or hub-wide; set it with `scion hub secret set %s`", name, name)
		}
		if err != nil {
			return nil, err
		}
		res := authz.Resource{Secret: &authz.SecretRes{Name: name, Held: heldBy(holder, x)}}
		if x.ProjectID != "" {
			res.Project = plan.ProjectRes(p)
		}
		if err := httpapi.Authorize(ctx, s.log, c, authz.SecretUse, res, nil); err != nil {
			return nil, err
		}
		if out[name], err = s.openSecret(x); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// heldBy reports whether agent holder was given secret x: the one rule,
// which the store's floor applies too (authstore.HeldBy).
func heldBy(holder *store.Agent, x *store.Secret) bool { return authstore.HeldBy(holder, x) }

// lookupSecret finds the secret a name in project projectID means: the
// project's, else the hub-wide one.
func (s *Server) lookupSecret(ctx context.Context, projectID, name string) (*store.Secret, error) {
	x, err := s.store.GetSecret(ctx, projectID, name)
	if isNotFound(err) {
		x, err = s.store.GetSecret(ctx, "", name)
	}
	return x, err
}

func (s *Server) openSecret(x *store.Secret) (string, error) {
	v, err := s.secrets.Open(x.ProjectID, x.Name, x.Ciphertext)
	if err != nil {
		s.log.Error("secret does not open with this Hub's secrets key", "secret", x.Name, "project", x.ProjectID)
		return "", api.Errorf(api.CodeInternal, "secret %q cannot be decrypted with this Hub's key", x.Name)
	}
	return string(v), nil
}

// recordedSecrets resolves the secrets agent a of project p names for a
// create sent again by c (a keyed retry, a start that re-creates the
// agent). Sending it hands the values over again, so c must be allowed
// to name them now, as for a new agent: what a name means may have
// changed since the agent was created (a project secret set since then
// shadows the hub-wide one its creator named).
func (s *Server) recordedSecrets(ctx context.Context, c *Caller, p *store.Project, a *store.Agent) (map[string]string, error) {
	if len(a.SecretNames) == 0 {
		return nil, nil
	}
	var holder *store.Agent
	if c.Kind == CallerAgent {
		var err error
		if holder, err = s.store.GetAgent(ctx, c.ID); err != nil {
			return nil, err
		}
	}
	return s.agentSecrets(ctx, c, p, a.SecretNames, holder)
}
