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

func (s *Server) handleCreateProject(w http.ResponseWriter, r *http.Request, c *Caller) {
	var req api.CreateProjectRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := requireUser(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := requireWriter(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := validName("project", req.Name); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.SharingMode == "" {
		req.SharingMode = api.SharingEmptyPerAgent
		if req.GitRemote != "" {
			req.SharingMode = api.SharingClonePerAgent
		}
	}
	if !api.ValidSharingMode(req.SharingMode) {
		s.writeError(w, r, api.BadRequest("invalid sharingMode %q: use worktree-per-agent, shared-workspace, clone-per-agent or empty-per-agent", req.SharingMode))
		return
	}
	def, err := s.resolveBrokerRef(r.Context(), req.DefaultBroker)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := time.Now().UTC()
	p := &store.Project{ID: mustV7(), Name: req.Name, GitRemote: req.GitRemote, SharingMode: req.SharingMode,
		DefaultBrokerID: def, ActiveProfile: req.ActiveProfile, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateProject(r.Context(), p); err != nil {
		if isExists(err) {
			err = api.Conflict(api.CodeAlreadyExists, "project %q already exists", req.Name)
		}
		s.writeError(w, r, err)
		return
	}
	v, err := s.projectView(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) handleListProjects(w http.ResponseWriter, r *http.Request, c *Caller) {
	page, err := pageFrom(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c.ProjectID != "" { // agents and single-project tokens see one project
		p, err := s.loadProject(r.Context(), c, c.ProjectID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		v, err := s.projectView(r.Context(), p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, api.List[api.Project]{Items: []api.Project{v}, Total: 1})
		return
	}
	items, next, total, err := s.store.ListProjects(r.Context(), page)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.List[api.Project]{Items: make([]api.Project, 0, len(items)), NextCursor: next, Total: total}
	for _, p := range items {
		v, err := s.projectView(r.Context(), p)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out.Items = append(out.Items, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleGetProject(w http.ResponseWriter, r *http.Request, c *Caller) {
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err == nil {
		var v api.Project
		if v, err = s.projectView(r.Context(), p); err == nil {
			writeJSON(w, http.StatusOK, v)
			return
		}
	}
	s.writeError(w, r, err)
}

func (s *Server) handleUpdateProject(w http.ResponseWriter, r *http.Request, c *Caller) {
	var req api.UpdateProjectRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if c.Kind != CallerUser { // agents never update projects
		s.writeError(w, r, api.Forbidden("agents cannot update projects"))
		return
	}
	if err := requireWriter(c); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.GitRemote != nil {
		p.GitRemote = *req.GitRemote
	}
	if req.SharingMode != nil {
		if !api.ValidSharingMode(*req.SharingMode) {
			s.writeError(w, r, api.BadRequest("invalid sharingMode %q", *req.SharingMode))
			return
		}
		p.SharingMode = *req.SharingMode
	}
	if req.DefaultBroker != nil {
		if p.DefaultBrokerID, err = s.resolveBrokerRef(r.Context(), *req.DefaultBroker); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if req.ActiveProfile != nil {
		p.ActiveProfile = *req.ActiveProfile
	}
	p.UpdatedAt = time.Now().UTC()
	if err := s.store.UpdateProject(r.Context(), p); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.projectView(r.Context(), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) handleDeleteProject(w http.ResponseWriter, r *http.Request, c *Caller) {
	p, err := s.loadProject(r.Context(), c, r.PathValue("project"))
	if err == nil && c.Kind != CallerUser {
		err = api.Forbidden("agents cannot delete projects")
	}
	if err == nil {
		err = requireWriter(c)
	}
	if err == nil {
		err = s.store.DeleteProject(r.Context(), p.ID)
		if isConflict(err) {
			err = api.Conflict(api.CodeConflict, "project %q still has agents; delete them first (a forced project delete comes later)", p.Name)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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
