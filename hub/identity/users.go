// Users: admins list them and change their Hub role (a first OIDC
// sign-in gets the default role; promoting someone is an admin's call).

package identity

import (
	"fmt"
	"net/http"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/storeerr"
	"github.com/scion-go/scion/store"
)

func userView(u *store.User) api.User {
	return api.User{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, CreatedAt: u.CreatedAt}
}

func (s *Service) handleListUsers(r *http.Request, c *authz.Caller) (int, any, error) {
	if err := httpapi.Authorize(r.Context(), s.log, c, authz.UserManage, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	us, err := s.store.ListUsers(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := api.List[api.User]{Items: make([]api.User, 0, len(us)), Total: len(us)}
	for _, u := range us {
		out.Items = append(out.Items, userView(u))
	}
	return http.StatusOK, out, nil
}

func (s *Service) handleUpdateUser(r *http.Request, c *authz.Caller) (int, any, error) {
	ctx := r.Context()
	if err := httpapi.Authorize(ctx, s.log, c, authz.UserManage, authz.Resource{}, nil); err != nil {
		return 0, nil, err
	}
	var req api.UpdateUserRequest
	if err := httpapi.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	id := r.PathValue("user")
	u, err := s.store.GetUser(ctx, id)
	if err != nil {
		return 0, nil, storeerr.Map(err, api.CodeUserNotFound, fmt.Sprintf("user %q", id))
	}
	if req.Role != nil {
		switch *req.Role {
		case api.RoleAdmin, api.RoleMember, api.RoleViewer:
		default:
			return 0, nil, api.BadRequest("invalid role %q: use admin, member or viewer", *req.Role)
		}
		if u.ID == c.UserID && *req.Role != api.RoleAdmin {
			return 0, nil, api.Conflict(api.CodeConflict, "you cannot take the admin role from yourself; ask another admin")
		}
		u.Role = *req.Role
	}
	if err := s.store.UpdateUser(ctx, u); err != nil {
		return 0, nil, err
	}
	s.log.Info("user updated", "user", u.ID, "role", u.Role, "by", c.Principal())
	return http.StatusOK, userView(u), nil
}
