package hub

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/scion-go/scion/api"
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

// loadProject resolves {project} (ID or name) and hides projects the
// caller cannot see behind the same 404 as unknown ones.
func (s *Server) loadProject(ctx context.Context, c *Caller, ref string) (*store.Project, error) {
	p, err := s.store.GetProject(ctx, ref)
	if isNotFound(err) || (err == nil && !canSeeProject(c, p.ID)) {
		return nil, api.NotFound(api.CodeProjectNotFound, "project %q not found", ref)
	}
	return p, err
}

func (s *Server) resolveBrokerRef(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	b, err := s.store.GetBroker(ctx, ref)
	if isNotFound(err) {
		return "", api.NotFound(api.CodeBrokerNotFound, "runtime broker %q not found", ref)
	}
	if err != nil {
		return "", err
	}
	return b.ID, nil
}

func (s *Server) handleCreateProject(r *http.Request, c *Caller) (int, any, error) {
	var req api.CreateProjectRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if err := requireUser(c); err != nil {
		return 0, nil, err
	}
	if err := requireWriter(c); err != nil {
		return 0, nil, err
	}
	if err := validName("project", req.Name); err != nil {
		return 0, nil, err
	}
	if req.SharingMode == "" {
		req.SharingMode = api.SharingEmptyPerAgent
		if req.GitRemote != "" {
			req.SharingMode = api.SharingClonePerAgent
		}
	}
	if !api.ValidSharingMode(req.SharingMode) {
		return 0, nil, api.BadRequest("invalid sharingMode %q: use worktree-per-agent, shared-workspace, clone-per-agent or empty-per-agent", req.SharingMode)
	}
	def, err := s.resolveBrokerRef(r.Context(), req.DefaultBroker)
	if err != nil {
		return 0, nil, err
	}
	now := time.Now().UTC()
	p := &store.Project{ID: mustV7(), Name: req.Name, GitRemote: req.GitRemote, SharingMode: req.SharingMode,
		DefaultBrokerID: def, ActiveProfile: req.ActiveProfile, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateProject(r.Context(), p); err != nil {
		if isExists(err) {
			err = api.Conflict(api.CodeAlreadyExists, "project %q already exists", req.Name)
		}
		return 0, nil, err
	}
	v, err := s.projectView(r.Context(), p)
	return http.StatusCreated, v, err
}

func (s *Server) handleListProjects(r *http.Request, c *Caller) (int, any, error) {
	page, err := pageFrom(r)
	if err != nil {
		return 0, nil, err
	}
	var items []*store.Project
	var next string
	var total int
	if c.ProjectID != "" { // agents and single-project tokens see one project
		p, err := s.loadProject(r.Context(), c, c.ProjectID)
		if err != nil {
			return 0, nil, err
		}
		items, total = []*store.Project{p}, 1
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
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err != nil {
		return 0, nil, err
	}
	v, err := s.projectView(r.Context(), p)
	return http.StatusOK, v, err
}

func (s *Server) handleUpdateProject(r *http.Request, c *Caller) (int, any, error) {
	var req api.UpdateProjectRequest
	if err := decodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err != nil {
		return 0, nil, err
	}
	if c.Kind != CallerUser { // agents never update projects
		return 0, nil, api.Forbidden("agents cannot update projects")
	}
	if err := requireWriter(c); err != nil {
		return 0, nil, err
	}
	if req.GitRemote != nil {
		p.GitRemote = *req.GitRemote
	}
	if req.SharingMode != nil {
		if !api.ValidSharingMode(*req.SharingMode) {
			return 0, nil, api.BadRequest("invalid sharingMode %q", *req.SharingMode)
		}
		p.SharingMode = *req.SharingMode
	}
	if req.DefaultBroker != nil {
		if p.DefaultBrokerID, err = s.resolveBrokerRef(r.Context(), *req.DefaultBroker); err != nil {
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

func (s *Server) handleDeleteProject(r *http.Request, c *Caller) (int, any, error) {
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err != nil {
		return 0, nil, err
	}
	if c.Kind != CallerUser {
		return 0, nil, api.Forbidden("agents cannot delete projects")
	}
	if err := requireWriter(c); err != nil {
		return 0, nil, err
	}
	if err := s.store.DeleteProject(r.Context(), p.ID); err != nil {
		if isConflict(err) {
			err = api.Conflict(api.CodeConflict, "project %q still has agents; delete them first (a forced project delete comes later)", p.Name)
		}
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// pageFrom reads ?cursor= and ?limit= (1..1000).
func pageFrom(r *http.Request) (store.Page, error) {
	p := store.Page{Cursor: r.URL.Query().Get("cursor")}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return p, api.BadRequest("limit must be an integer from 1 to 1000")
		}
		p.Limit = n
	}
	if len(p.Cursor) > 256 {
		return p, api.BadRequest("cursor too long")
	}
	return p, nil
}

func mustV7() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
