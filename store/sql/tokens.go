package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

const userCols = `id, name, email, role, issuer, subject, created_at`

// CreateUser inserts u, filling in ID and CreatedAt when zero.
// ErrAlreadyExists for a taken ID or a taken non-empty (Issuer, Subject).
func (s *Store) CreateUser(ctx context.Context, u *store.User) error {
	n := *u
	stamp(&n.ID, &n.CreatedAt, nil)
	_, err := s.w.Exec(ctx, `INSERT INTO users (`+userCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		n.ID, n.Name, n.Email, n.Role, n.Issuer, n.Subject, s.d.Time(n.CreatedAt))
	if err != nil {
		return s.mapErr(err, fmt.Sprintf("create user %q", n.ID))
	}
	*u = n
	return nil
}

// userDest returns the scan destinations of userCols.
func (s *Store) userDest(u *store.User) []any {
	return []any{&u.ID, &u.Name, &u.Email, &u.Role, &u.Issuer, &u.Subject, s.d.ScanTime(&u.CreatedAt)}
}

func (s *Store) scanUser(row Row) (*store.User, error) {
	var u store.User
	if err := row.Scan(s.userDest(&u)...); err != nil {
		return nil, err
	}
	return &u, nil
}

// GetUser looks up by ID.
func (s *Store) GetUser(ctx context.Context, id string) (*store.User, error) {
	u, err := s.scanUser(s.r.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("user %q", id))
	}
	return u, nil
}

// GetUserBySubject looks up by OIDC identity. The non-empty subject
// condition lets the planner use the partial index users_subject and keeps
// an empty subject (the bootstrap admin's) from matching.
func (s *Store) GetUserBySubject(ctx context.Context, issuer, subject string) (*store.User, error) {
	u, err := s.scanUser(s.r.QueryRow(ctx, `SELECT `+userCols+` FROM users
		WHERE issuer = $1 AND subject = $2 AND subject <> ''`, issuer, subject))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("user with subject %q of %q", subject, issuer))
	}
	return u, nil
}

// UpdateUser writes u's name, email and role; ErrNotFound if it is gone.
func (s *Store) UpdateUser(ctx context.Context, u *store.User) error {
	n, err := s.w.Exec(ctx, `UPDATE users SET name = $1, email = $2, role = $3 WHERE id = $4`, u.Name, u.Email, u.Role, u.ID)
	return s.mustAffect(n, err, fmt.Sprintf("update user %q", u.ID))
}

// ListUsers returns every user in ID order (people, not agents: few).
func (s *Store) ListUsers(ctx context.Context) ([]*store.User, error) {
	rows, err := s.r.Query(ctx, `SELECT `+userCols+` FROM users ORDER BY id`)
	out, err := collect(rows, err, s.scanUser)
	return out, s.mapErr(err, "list users")
}

const tokenCols = `id, hash, kind, user_id, agent_id, project_id, scopes, name, expires_at, revoked_at, created_at`

// CreateToken inserts t, filling in ID and CreatedAt when zero. The hash
// is unique: ErrAlreadyExists for a second token with the same hash.
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	if len(t.Hash) == 0 {
		return errors.New("create token: empty hash")
	}
	n := *t
	stamp(&n.ID, &n.CreatedAt, nil)
	n.ExpiresAt, n.RevokedAt = dbutil.TimePtr(n.ExpiresAt), dbutil.TimePtr(n.RevokedAt)
	scopes, err := dbutil.JSON(n.Scopes)
	if err != nil {
		return fmt.Errorf("create token: scopes: %w", err)
	}
	_, err = s.w.Exec(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		n.ID, n.Hash, n.Kind, n.UserID, n.AgentID, n.ProjectID, s.d.JSON(scopes), n.Name,
		s.ptrTime(n.ExpiresAt), s.ptrTime(n.RevokedAt), s.d.Time(n.CreatedAt))
	if err != nil {
		return s.mapErr(err, fmt.Sprintf("create token %q", n.ID))
	}
	*t = n
	return nil
}

// scanToken reads tokenCols and then extra.
func (s *Store) scanToken(row Row, extra ...any) (*store.Token, error) {
	var t store.Token
	var scopes []byte
	if err := row.Scan(append([]any{&t.ID, &t.Hash, &t.Kind, &t.UserID, &t.AgentID, &t.ProjectID, &scopes, &t.Name,
		s.scanPtrTime(&t.ExpiresAt), s.scanPtrTime(&t.RevokedAt), s.d.ScanTime(&t.CreatedAt)}, extra...)...); err != nil {
		return nil, err
	}
	if err := dbutil.UnJSON(scopes, &t.Scopes); err != nil {
		return nil, fmt.Errorf("token %s scopes: %w", t.ID, err)
	}
	return &t, nil
}

// GetToken returns the token with that ID, revoked or expired ones
// included.
func (s *Store) GetToken(ctx context.Context, id string) (*store.Token, error) {
	t, err := s.scanToken(s.r.QueryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE id = $1`, id))
	if err != nil {
		return nil, s.mapErr(err, fmt.Sprintf("token %q", id))
	}
	return t, nil
}

// GetTokenByHash returns the token with that hash, revoked or expired
// ones included: judging them is the caller's business.
func (s *Store) GetTokenByHash(ctx context.Context, hash []byte) (*store.Token, error) {
	t, err := s.scanToken(s.r.QueryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = $1`, hash))
	if err != nil {
		return nil, s.mapErr(err, "token")
	}
	return t, nil
}

// selectTokenUserSQL reads a token by hash with its user.
var selectTokenUserSQL = `SELECT ` + dbutil.Prefixed("t.", tokenCols) + `, ` + dbutil.Prefixed("u.", userCols) +
	` FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = $1`

// GetTokenAndUser reads the token with that hash and its user in one
// statement.
func (s *Store) GetTokenAndUser(ctx context.Context, hash []byte) (*store.Token, *store.User, error) {
	var u store.User
	t, err := s.scanToken(s.r.QueryRow(ctx, selectTokenUserSQL, hash), s.userDest(&u)...)
	if err != nil {
		return nil, nil, s.mapErr(err, "token")
	}
	return t, &u, nil
}

// ListTokens returns a user's tokens, newest first, without their hashes.
// The non-empty user_id condition matches the partial index tokens_user.
func (s *Store) ListTokens(ctx context.Context, userID string) ([]*store.Token, error) {
	rows, err := s.r.Query(ctx, `SELECT `+tokenCols+` FROM tokens
		WHERE user_id = $1 AND user_id <> '' ORDER BY created_at DESC, id DESC`, userID)
	out, err := collect(rows, err, func(r Row) (*store.Token, error) {
		t, err := s.scanToken(r)
		if t != nil {
			t.Hash = nil
		}
		return t, err
	})
	return out, s.mapErr(err, fmt.Sprintf("tokens of user %q", userID))
}

// RevokeToken marks the token revoked at at. Revoking again keeps the
// first revocation time.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	n, err := s.w.Exec(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2`, s.d.Time(dbutil.Time(at)), id)
	return s.mustAffect(n, err, fmt.Sprintf("revoke token %q", id))
}

const joinTokenCols = `hash, name, created_by, expires_at, used_at, created_at`

// CreateJoinToken inserts t, filling in CreatedAt when zero.
func (s *Store) CreateJoinToken(ctx context.Context, t *store.JoinToken) error {
	if len(t.Hash) == 0 {
		return errors.New("create join token: empty hash")
	}
	n := *t
	if n.CreatedAt.IsZero() {
		n.CreatedAt = dbutil.Now()
	}
	n.CreatedAt, n.ExpiresAt, n.UsedAt = dbutil.Time(n.CreatedAt), dbutil.Time(n.ExpiresAt), dbutil.TimePtr(n.UsedAt)
	_, err := s.w.Exec(ctx, `INSERT INTO join_tokens (`+joinTokenCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		n.Hash, n.Name, n.CreatedBy, s.d.Time(n.ExpiresAt), s.ptrTime(n.UsedAt), s.d.Time(n.CreatedAt))
	if err != nil {
		return s.mapErr(err, fmt.Sprintf("create join token %q", n.Name))
	}
	*t = n
	return nil
}

// ConsumeJoinToken marks the token used if it is unused and expires after
// now, in one UPDATE: a racing second consumer waits for the first (its
// row lock, or the single writer), re-evaluates "used_at IS NULL" and
// matches nothing. ErrTokenUsed for a used or expired token, ErrNotFound
// for an unknown one.
func (s *Store) ConsumeJoinToken(ctx context.Context, hash []byte, now time.Time) (*store.JoinToken, error) {
	return s.consumeJoinToken(ctx, s.w, hash, now)
}

// consumeJoinToken is ConsumeJoinToken on q (the writer, or a transaction).
func (s *Store) consumeJoinToken(ctx context.Context, q Querier, hash []byte, now time.Time) (*store.JoinToken, error) {
	var t store.JoinToken
	err := q.QueryRow(ctx, `UPDATE join_tokens SET used_at = $1
		WHERE hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING `+joinTokenCols, s.d.Time(dbutil.Time(now)), hash).Scan(
		&t.Hash, &t.Name, &t.CreatedBy, s.d.ScanTime(&t.ExpiresAt), s.scanPtrTime(&t.UsedAt), s.d.ScanTime(&t.CreatedAt))
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM join_tokens WHERE hash = $1)`, hash).Scan(&exists); err != nil {
			return nil, s.mapErr(err, "consume join token")
		}
		if !exists {
			return nil, fmt.Errorf("consume join token: %w", store.ErrNotFound)
		}
		return nil, fmt.Errorf("consume join token: %w", store.ErrTokenUsed)
	}
	if err != nil {
		return nil, s.mapErr(err, "consume join token")
	}
	return &t, nil
}
