package authstore

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/store"
)

// ignoreHidden turns a list's not-found refusal into the empty list: a
// list returns what the caller may see, here nothing.
func ignoreHidden(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func (s *Store) CreateUser(ctx context.Context, u *store.User) error {
	if _, err := decide(ctx, "CreateUser", Subject{User: u.ID}); err != nil {
		return err
	}
	return s.inner.CreateUser(ctx, u)
}

func (s *Store) GetUser(ctx context.Context, id string) (*store.User, error) {
	if _, err := decide(ctx, "GetUser", Subject{User: id}); err != nil {
		return nil, err
	}
	return s.inner.GetUser(ctx, id)
}

func (s *Store) GetUserBySubject(ctx context.Context, issuer, subject string) (*store.User, error) {
	if _, err := gate(ctx, "GetUserBySubject"); err != nil {
		return nil, err
	}
	return s.inner.GetUserBySubject(ctx, issuer, subject)
}

func (s *Store) UpdateUser(ctx context.Context, u *store.User) error {
	if _, err := decide(ctx, "UpdateUser", Subject{User: u.ID}); err != nil {
		return err
	}
	return s.inner.UpdateUser(ctx, u)
}

// ListUsers lists every user for user.manage, else the caller's own.
func (s *Store) ListUsers(ctx context.Context) ([]*store.User, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	us, err := s.inner.ListUsers(ctx)
	if err != nil || a.system {
		return us, err
	}
	return slices.DeleteFunc(us, func(u *store.User) bool {
		return !Allowed("ListUsers", a.caller, Subject{User: u.ID})
	}), nil
}

func tokenSubject(t *store.Token) Subject {
	s := Subject{User: t.UserID, Kind: t.Kind}
	if t.ProjectID != "" {
		s.Res.Project = &authz.Project{ID: t.ProjectID}
	}
	return s
}

func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	if _, err := decide(ctx, "CreateToken", tokenSubject(t)); err != nil {
		return err
	}
	return s.inner.CreateToken(ctx, t)
}

func (s *Store) GetToken(ctx context.Context, id string) (*store.Token, error) {
	a, err := actorOf(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.inner.GetToken(ctx, id)
	if err != nil || a.system {
		return t, err
	}
	if err := verdict(Decide("GetToken", a.caller, tokenSubject(t))); err != nil {
		return nil, err
	}
	return t, nil
}

func (s *Store) GetTokenByHash(ctx context.Context, hash []byte) (*store.Token, error) {
	if _, err := gate(ctx, "GetTokenByHash"); err != nil {
		return nil, err
	}
	return s.inner.GetTokenByHash(ctx, hash)
}

func (s *Store) GetTokenAndUser(ctx context.Context, hash []byte) (*store.Token, *store.User, error) {
	if _, err := gate(ctx, "GetTokenAndUser"); err != nil {
		return nil, nil, err
	}
	return s.inner.GetTokenAndUser(ctx, hash)
}

// ListTokens lists userID's tokens for that user (and a hub admin).
func (s *Store) ListTokens(ctx context.Context, userID string) ([]*store.Token, error) {
	if _, err := decide(ctx, "ListTokens", Subject{User: userID}); err != nil {
		return nil, ignoreHidden(err)
	}
	return s.inner.ListTokens(ctx, userID)
}

func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	a, err := actorOf(ctx)
	if err != nil {
		return err
	}
	if !a.system {
		t, err := s.inner.GetToken(ctx, id)
		if err != nil {
			return err
		}
		if err := verdict(Decide("RevokeToken", a.caller, tokenSubject(t))); err != nil {
			return err
		}
	}
	return s.inner.RevokeToken(ctx, id, at)
}

func (s *Store) CreateJoinToken(ctx context.Context, t *store.JoinToken) error {
	if _, err := gate(ctx, "CreateJoinToken"); err != nil {
		return err
	}
	return s.inner.CreateJoinToken(ctx, t)
}

func (s *Store) ConsumeJoinToken(ctx context.Context, hash []byte, now time.Time) (*store.JoinToken, error) {
	if _, err := gate(ctx, "ConsumeJoinToken"); err != nil {
		return nil, err
	}
	return s.inner.ConsumeJoinToken(ctx, hash, now)
}

// JoinBroker is the public join route's: the join token is the
// credential, checked by the store in the transaction (system work).
func (s *Store) JoinBroker(ctx context.Context, hash []byte, now time.Time, build func(*store.JoinToken) (*store.Broker, error)) (*store.Broker, error) {
	if _, err := gate(ctx, "JoinBroker"); err != nil {
		return nil, err
	}
	return s.inner.JoinBroker(ctx, hash, now, build)
}
