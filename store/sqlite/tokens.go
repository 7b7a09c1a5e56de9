package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/internal/dbutil"
)

// CreateUser inserts u, filling in ID and CreatedAt when zero.
// ErrAlreadyExists for a taken ID or a taken non-empty (Issuer, Subject).
func (s *Store) CreateUser(ctx context.Context, u *store.User) error {
	n := *u
	if n.ID == "" {
		n.ID = dbutil.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = dbutil.Now()
	}
	n.CreatedAt = dbutil.Time(n.CreatedAt)
	_, err := s.w.ExecContext(ctx, `INSERT INTO users (`+userCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		n.ID, n.Name, n.Email, n.Role, n.Issuer, n.Subject, micros(n.CreatedAt))
	if err != nil {
		return mapErr(err, fmt.Sprintf("create user %q", n.ID))
	}
	*u = n
	return nil
}

const userCols = `id, name, email, role, issuer, subject, created_at`

func scanUser(sc scanner) (*store.User, error) {
	var u store.User
	dest, finish := userDest(&u)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	return &u, finish()
}

// userDest returns the scan destinations of userCols and what completes u
// once they are scanned.
func userDest(u *store.User) ([]any, func() error) {
	var created int64
	return []any{&u.ID, &u.Name, &u.Email, &u.Role, &u.Issuer, &u.Subject, &created}, func() error {
		u.CreatedAt = fromMicros(created)
		return nil
	}
}

// GetUser looks up by ID.
func (s *Store) GetUser(ctx context.Context, id string) (*store.User, error) {
	u, err := scanUser(s.selectUser.QueryRowContext(ctx, id))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("user %q", id))
	}
	return u, nil
}

// GetUserBySubject looks up by OIDC identity. The non-empty subject condition lets
// SQLite use the partial index users_subject and keeps an empty subject
// (the bootstrap admin's) from matching.
func (s *Store) GetUserBySubject(ctx context.Context, issuer, subject string) (*store.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userCols+` FROM users
		WHERE issuer = ? AND subject = ? AND subject <> ''`, issuer, subject))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("user with subject %q of %q", subject, issuer))
	}
	return u, nil
}

// UpdateUser writes u's name, email and role; ErrNotFound if it is gone.
func (s *Store) UpdateUser(ctx context.Context, u *store.User) error {
	res, err := s.w.ExecContext(ctx, `UPDATE users SET name = ?, email = ?, role = ? WHERE id = ?`,
		u.Name, u.Email, u.Role, u.ID)
	return mustAffect(res, err, fmt.Sprintf("update user %q", u.ID))
}

// ListUsers returns every user in ID order (people, not agents: few).
func (s *Store) ListUsers(ctx context.Context) ([]*store.User, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+userCols+` FROM users ORDER BY id`)
	if err != nil {
		return nil, mapErr(err, "list users")
	}
	defer rows.Close()
	out := []*store.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, mapErr(err, "list users")
		}
		out = append(out, u)
	}
	return out, mapErr(rows.Err(), "list users")
}

const tokenCols = `id, hash, kind, user_id, agent_id, project_id, scopes, name, expires_at, revoked_at, created_at`

// CreateToken inserts t, filling in ID and CreatedAt when zero. The hash
// is unique: ErrAlreadyExists for a second token with the same hash.
func (s *Store) CreateToken(ctx context.Context, t *store.Token) error {
	if len(t.Hash) == 0 {
		return errors.New("create token: empty hash")
	}
	n := *t
	if n.ID == "" {
		n.ID = dbutil.NewID()
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = dbutil.Now()
	}
	n.CreatedAt = dbutil.Time(n.CreatedAt)
	n.ExpiresAt, n.RevokedAt = dbutil.TimePtr(n.ExpiresAt), dbutil.TimePtr(n.RevokedAt)
	scopes, err := dbutil.JSON(n.Scopes)
	if err != nil {
		return fmt.Errorf("create token: scopes: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.ID, n.Hash, n.Kind, n.UserID, n.AgentID, n.ProjectID, text(scopes), n.Name,
		ptrMicros(n.ExpiresAt), ptrMicros(n.RevokedAt), micros(n.CreatedAt))
	if err != nil {
		return mapErr(err, fmt.Sprintf("create token %q", n.ID))
	}
	*t = n
	return nil
}

func scanToken(sc scanner) (*store.Token, error) {
	var t store.Token
	var scopes []byte
	var expires, revoked sql.NullInt64
	var created int64
	if err := sc.Scan(&t.ID, &t.Hash, &t.Kind, &t.UserID, &t.AgentID, &t.ProjectID, &scopes, &t.Name, &expires,
		&revoked, &created); err != nil {
		return nil, err
	}
	if err := dbutil.UnJSON(scopes, &t.Scopes); err != nil {
		return nil, fmt.Errorf("token %s scopes: %w", t.ID, err)
	}
	t.ExpiresAt, t.RevokedAt = ptrFromMicros(expires), ptrFromMicros(revoked)
	t.CreatedAt = fromMicros(created)
	return &t, nil
}

// GetToken returns the token with that ID, revoked or expired ones
// included.
func (s *Store) GetToken(ctx context.Context, id string) (*store.Token, error) {
	t, err := scanToken(s.r.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM tokens WHERE id = ?`, id))
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("token %q", id))
	}
	return t, nil
}

// GetTokenByHash returns the token with that hash, revoked or expired
// ones included: judging them is the caller's business.
func (s *Store) GetTokenByHash(ctx context.Context, hash []byte) (*store.Token, error) {
	t, err := scanToken(s.selectToken.QueryRowContext(ctx, hash))
	if err != nil {
		return nil, mapErr(err, "token")
	}
	return t, nil
}

// GetTokenAndUser reads the token with that hash and its user in one
// statement.
func (s *Store) GetTokenAndUser(ctx context.Context, hash []byte) (*store.Token, *store.User, error) {
	var u store.User
	ud, userDone := userDest(&u)
	t, err := scanToken(dbutil.WithExtra{Row: s.selectTokenUser.QueryRowContext(ctx, hash), Extra: ud})
	if err != nil {
		return nil, nil, mapErr(err, "token")
	}
	return t, &u, userDone()
}

// ListTokens returns a user's tokens, newest first, without their hashes.
// The non-empty user_id condition matches the partial index tokens_user.
func (s *Store) ListTokens(ctx context.Context, userID string) ([]*store.Token, error) {
	what := fmt.Sprintf("tokens of user %q", userID)
	rows, err := s.r.QueryContext(ctx, `SELECT `+tokenCols+` FROM tokens
		WHERE user_id = ? AND user_id <> '' ORDER BY created_at DESC, id DESC`, userID)
	if err != nil {
		return nil, mapErr(err, what)
	}
	defer rows.Close()
	out := []*store.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, mapErr(err, what)
		}
		t.Hash = nil
		out = append(out, t)
	}
	return out, mapErr(rows.Err(), what)
}

// RevokeToken marks the token revoked at at. Revoking again keeps the
// first revocation time.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`,
		micros(dbutil.Time(at)), id)
	return mustAffect(res, err, fmt.Sprintf("revoke token %q", id))
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
	_, err := s.w.ExecContext(ctx, `INSERT INTO join_tokens (`+joinTokenCols+`) VALUES (?, ?, ?, ?, ?, ?)`,
		n.Hash, n.Name, n.CreatedBy, micros(n.ExpiresAt), ptrMicros(n.UsedAt), micros(n.CreatedAt))
	if err != nil {
		return mapErr(err, fmt.Sprintf("create join token %q", n.Name))
	}
	*t = n
	return nil
}

// ConsumeJoinToken marks the token used if it is unused and expires after
// now, in one UPDATE: of two racing consumers exactly one changes the row.
// ErrTokenUsed for a used or expired token, ErrNotFound for an unknown one.
func (s *Store) ConsumeJoinToken(ctx context.Context, hash []byte, now time.Time) (*store.JoinToken, error) {
	var t *store.JoinToken
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = consumeJoinToken(ctx, tx, hash, now)
		return err
	})
	return t, err
}

// consumeJoinToken is ConsumeJoinToken inside tx.
func consumeJoinToken(ctx context.Context, tx *sql.Tx, hash []byte, now time.Time) (*store.JoinToken, error) {
	now = dbutil.Time(now)
	var t store.JoinToken
	var expires, created int64
	var used sql.NullInt64
	err := tx.QueryRowContext(ctx, `UPDATE join_tokens SET used_at = ?1
		WHERE hash = ?2 AND used_at IS NULL AND expires_at > ?1 RETURNING `+joinTokenCols, micros(now), hash).Scan(
		&t.Hash, &t.Name, &t.CreatedBy, &expires, &used, &created)
	if errors.Is(err, sql.ErrNoRows) {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM join_tokens WHERE hash = ?`, hash).Scan(&n); err != nil {
			return nil, mapErr(err, "consume join token")
		}
		if n == 0 {
			return nil, fmt.Errorf("consume join token: %w", store.ErrNotFound)
		}
		return nil, fmt.Errorf("consume join token: %w", store.ErrTokenUsed)
	}
	if err != nil {
		return nil, mapErr(err, "consume join token")
	}
	t.ExpiresAt, t.UsedAt, t.CreatedAt = fromMicros(expires), ptrFromMicros(used), fromMicros(created)
	return &t, nil
}
