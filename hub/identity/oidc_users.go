package identity

import (
	"context"
	"time"

	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/signin"
	"github.com/scion-go/scion/store"
)

// signInUser finds the user of an OIDC identity, or creates it at its
// first sign-in with the role the configuration gives. Later sign-ins keep
// the stored role, whatever the configuration says now.
func (o *oidcSignIn) signInUser(ctx context.Context, id *signin.Identity) (*store.User, bool, error) {
	st, issuer := o.s.store, o.cfg.IssuerURL
	u, err := st.GetUserBySubject(ctx, issuer, id.Subject)
	if err == nil {
		return u, false, nil
	}
	if !isNotFound(err) {
		return nil, false, err
	}
	email := ""
	if id.EmailVerified {
		email = id.Email // an unverified address is not recorded as the user's
	}
	u = &store.User{ID: httpapi.NewID(), Name: id.Name, Email: email, Role: o.cfg.RoleFor(id.Email, id.EmailVerified),
		Issuer: issuer, Subject: id.Subject, CreatedAt: time.Now().UTC()}
	if err := st.CreateUser(ctx, u); err != nil {
		if !isExists(err) {
			return nil, false, err
		}
		// A concurrent first sign-in of the same identity won.
		u, err = st.GetUserBySubject(ctx, issuer, id.Subject)
		return u, false, err
	}
	return u, true, nil
}
