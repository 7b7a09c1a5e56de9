package identity

import (
	"context"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/store"
)

// BootstrapAdminID is the user the workstation Hub (and a fresh team Hub)
// creates as its first admin.
const BootstrapAdminID = "admin"

// BootstrapAdmin makes sure the bootstrap admin exists and returns a fresh
// bearer token for it. The token is shown to the local operator only (the
// workstation file, or a 0600 token file); it is never logged.
func (s *Service) BootstrapAdmin(ctx context.Context) (string, error) {
	ctx = authstore.AsSystem(ctx)
	if _, err := s.store.GetUser(ctx, BootstrapAdminID); err != nil {
		if !isNotFound(err) {
			return "", err
		}
		u := &store.User{ID: BootstrapAdminID, Name: "admin", Role: api.RoleAdmin, CreatedAt: time.Now().UTC()}
		if err := s.store.CreateUser(ctx, u); err != nil && !isExists(err) {
			return "", err
		}
	}
	return s.newUserToken(ctx, BootstrapAdminID, "bootstrap", 0)
}

// CreateUserToken creates a user with a role (if missing) and returns a
// token for it. Used by tests and by `scion server` admin tooling.
func (s *Service) CreateUserToken(ctx context.Context, id, role string) (string, error) {
	ctx = authstore.AsSystem(ctx)
	if _, err := s.store.GetUser(ctx, id); err != nil {
		if !isNotFound(err) {
			return "", err
		}
		if err := s.store.CreateUser(ctx, &store.User{ID: id, Name: id, Role: role, CreatedAt: time.Now().UTC()}); err != nil && !isExists(err) {
			return "", err
		}
	}
	return s.newUserToken(ctx, id, "cli", 0)
}
