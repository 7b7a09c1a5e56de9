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
