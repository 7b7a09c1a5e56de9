package hub

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

func (s *Server) projectView(ctx context.Context, p *store.Project) (api.Project, error) {
	prov, err := s.store.ProjectProviders(ctx, p.ID)
	if err != nil {
		return api.Project{}, err
	}
	if prov == nil {
		prov = []string{}
	}
	return api.Project{ID: p.ID, Name: p.Name, GitRemote: p.GitRemote, SharingMode: p.SharingMode,
		DefaultBrokerID: p.DefaultBrokerID, ActiveProfile: p.ActiveProfile, Providers: prov,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, nil
}

// loadProject resolves {project} (ID or name) and checks that c may do a
// on it; projects the caller cannot see get the same 404 as unknown ones.
func (s *Server) loadProject(ctx context.Context, c *Caller, ref string, a authz.Action) (*store.Project, error) {
	p, err := s.store.GetProject(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			httpapi.MarkChecked(ctx) // an unknown project is no answer about anything
		}
		return nil, storeerr.Map(err, api.CodeProjectNotFound, "project "+api.Quote(ref))
	}
	// Seeing the project comes first: a caller that cannot read it learns
	// nothing more about it.
	if err := httpapi.Authorize(ctx, s.log, c, authz.ProjectRead, authz.Resource{Project: plan.ProjectRes(p)}, httpapi.ProjectNotFound(ref)); err != nil {
		return nil, err
	}
	if a != authz.ProjectRead {
		if err := httpapi.Authorize(ctx, s.log, c, a, authz.Resource{Project: plan.ProjectRes(p)}, httpapi.ProjectNotFound(ref)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// resolveBrokerRef resolves a broker named in a project's settings; one
// the caller cannot see is answered like an unknown one.
func (s *Server) resolveBrokerRef(ctx context.Context, c *Caller, ref, projectID string) (string, error) {
	if ref == "" {
		return "", nil
	}
	b, err := s.store.GetBroker(ctx, ref)
	if err != nil {
		return "", storeerr.Map(err, api.CodeBrokerNotFound, "runtime broker "+api.Quote(ref))
	}
	if ok, err := s.brokerVisible(ctx, c, b, projectID); err != nil || !ok {
		if err == nil {
			err = httpapi.BrokerNotFound(ref)()
		}
		return "", err
	}
	return b.ID, nil
}

func (s *Server) handleCreateProject(r *http.Request, c *Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.ProjectCreate, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.CreateProjectRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := req.Validate(); err != nil {
		return 0, nil, err
	}
	req.WithDefaults()
	def, err := s.resolveBrokerRef(r.Context(), c, req.DefaultBroker, "")
	if err != nil {
		return 0, nil, err
	}
	now := time.Now().UTC()
	p := &store.Project{ID: httpapi.NewID(), Name: req.Name, GitRemote: req.GitRemote, SharingMode: req.SharingMode,
		DefaultBrokerID: def, ActiveProfile: req.ActiveProfile, CreatedBy: c.UserID, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateProject(r.Context(), p); err != nil {
		return 0, nil, storeerr.Map(err, api.CodeProjectNotFound, fmt.Sprintf("project %q", req.Name))
	}
	v, err := s.projectView(r.Context(), p)
	return http.StatusCreated, v, err
}

func (s *Server) handleListProjects(r *http.Request, c *Caller) (int, any, error) {
	page, err := httpapi.PageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	var items []*store.Project
	var next string
	var total int
	if c.ProjectID != "" { // agents and single-project tokens see one project
		p, err := s.loadProject(r.Context(), c, c.ProjectID, authz.ProjectRead)
		if err != nil {
			return 0, nil, err
		}
		items, total = []*store.Project{p}, 1
	} else if err := httpapi.Authorize(r.Context(), s.log, c, authz.ProjectRead, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	} else if items, next, total, err = s.store.ListProjects(r.Context(), page); err != nil {
		return 0, nil, err
	}
	out := api.List[api.Project]{Items: make([]api.Project, 0, len(items)), NextCursor: next, Total: total}
	for _, p := range items {
		v, err := s.projectView(r.Context(), p)
		if err != nil {
			return 0, nil, err
		}
		out.Items = append(out.Items, v)
	}
	return http.StatusOK, out, nil
}

func (s *Server) handleGetProject(r *http.Request, c *Caller) (int, any, error) {
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"), authz.ProjectRead)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.projectView(r.Context(), p)
	return http.StatusOK, v, err
}

func (s *Server) handleUpdateProject(r *http.Request, c *Caller) (int, any, error) {
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"), authz.ProjectUpdate)
	if err != nil {
		return 0, nil, err
	}
	var req api.UpdateProjectRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := req.Validate(); err != nil {
		return 0, nil, err
	}
	if req.GitRemote != nil {
		p.GitRemote = *req.GitRemote
	}
	if req.SharingMode != nil {
		p.SharingMode = *req.SharingMode
	}
	if req.DefaultBroker != nil {
		if p.DefaultBrokerID, err = s.resolveBrokerRef(r.Context(), c, *req.DefaultBroker, p.ID); err != nil {
			return 0, nil, err
		}
	}
	if req.ActiveProfile != nil {
		p.ActiveProfile = *req.ActiveProfile
	}
	p.UpdatedAt = time.Now().UTC()
	if err := s.store.UpdateProject(r.Context(), p); err != nil {
		return 0, nil, err
	}
	v, err := s.projectView(r.Context(), p)
	return http.StatusOK, v, err
}
