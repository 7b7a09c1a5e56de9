package storetest

import (
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

func testUsers(t *testing.T, s store.Store) {
	ctx := t.Context()
	users, err := s.ListUsers(ctx)
	must(t, err)
	equal(t, users, []*store.User{})

	u2 := &store.User{ID: "u2", Name: "Bea", Email: "bea@example.com", Role: "admin", CreatedAt: oddTime()}
	must(t, s.CreateUser(ctx, u2))
	if u2.CreatedAt != norm(u2.CreatedAt) {
		t.Fatalf("CreatedAt not normalised: %v", u2.CreatedAt)
	}
	u1 := &store.User{ID: "u1", Name: "Al"}
	must(t, s.CreateUser(ctx, u1))
	gen := &store.User{Name: "generated"}
	must(t, s.CreateUser(ctx, gen))
	if gen.ID == "" || gen.CreatedAt.IsZero() {
		t.Fatalf("CreateUser did not fill in ID and CreatedAt: %+v", gen)
	}

	got, err := s.GetUser(ctx, "u2")
	must(t, err)
	equal(t, got, u2)
	_, err = s.GetUser(ctx, "missing")
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.CreateUser(ctx, &store.User{ID: "u1"}), store.ErrAlreadyExists)

	users, err = s.ListUsers(ctx)
	must(t, err)
	// IDs sort bytewise: generated UUIDs start with a digit, before "u".
	equal(t, users, []*store.User{gen, u1, u2})
}

// testUserIdentity: users signed in through OIDC are found by (issuer,
// subject), which is unique when the subject is not empty.
func testUserIdentity(t *testing.T, s store.Store) {
	ctx := t.Context()
	const google, corp = "https://accounts.google.com", "https://sso.example.com"
	// The bootstrap admin has no identity; several users may lack one.
	admin := &store.User{ID: "admin", Name: "admin", Role: "admin"}
	must(t, s.CreateUser(ctx, admin))
	admin2 := &store.User{ID: "admin2"}
	must(t, s.CreateUser(ctx, admin2))

	u := &store.User{ID: "u1", Name: "Al", Email: "al@example.com", Role: "member", Issuer: google, Subject: "1077",
		CreatedAt: oddTime()}
	must(t, s.CreateUser(ctx, u))
	got, err := s.GetUser(ctx, "u1")
	must(t, err)
	equal(t, got, u)
	got, err = s.GetUserBySubject(ctx, google, "1077")
	must(t, err)
	equal(t, got, u)

	// The same subject at another issuer is another person.
	v := &store.User{ID: "u2", Name: "Bea", Issuer: corp, Subject: "1077"}
	must(t, s.CreateUser(ctx, v))
	got, err = s.GetUserBySubject(ctx, corp, "1077")
	must(t, err)
	equal(t, got, v)

	// A taken identity is refused and the argument left alone.
	dup := &store.User{Name: "Al again", Issuer: google, Subject: "1077"}
	wantErr(t, s.CreateUser(ctx, dup), store.ErrAlreadyExists)
	if dup.ID != "" || !dup.CreatedAt.IsZero() {
		t.Fatalf("failed create modified its argument: %+v", dup)
	}

	for _, q := range [][2]string{{google, "1078"}, {"https://other.example.com", "1077"}, {"", "1077"}, {"", ""}, {google, ""}} {
		_, err := s.GetUserBySubject(ctx, q[0], q[1])
		wantErr(t, err, store.ErrNotFound)
	}

	// UpdateUser writes name, email and role, nothing else.
	upd := *u
	upd.Name, upd.Email, upd.Role = "Alan", "", "admin"
	upd.Issuer, upd.Subject = corp, "other" // ignored
	upd.CreatedAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	must(t, s.UpdateUser(ctx, &upd))
	want := *u
	want.Name, want.Email, want.Role = "Alan", "", "admin"
	got, err = s.GetUserBySubject(ctx, google, "1077")
	must(t, err)
	equal(t, got, &want)
	wantErr(t, s.UpdateUser(ctx, &store.User{ID: "missing", Name: "m"}), store.ErrNotFound)

	users, err := s.ListUsers(ctx)
	must(t, err)
	equal(t, users, []*store.User{admin, admin2, &want, v})
}

func testTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	exp := oddTime().Add(48 * time.Hour)
	tok := &store.Token{Hash: []byte{0xde, 0xad, 0, 0xbe, 0xef}, Kind: store.TokenUser, UserID: "u1", ProjectID: "p1",
		Scopes: []string{"agents:read", "agents:write"}, Name: "laptop", ExpiresAt: &exp, CreatedAt: oddTime()}
	must(t, s.CreateToken(ctx, tok))
	if tok.ID == "" || *tok.ExpiresAt != norm(exp) || tok.CreatedAt != norm(tok.CreatedAt) {
		t.Fatalf("CreateToken did not fill in and normalise: %+v", tok)
	}
	if exp == *tok.ExpiresAt {
		t.Fatal("CreateToken normalised the caller's ExpiresAt in place")
	}
	got, err := s.GetTokenByHash(ctx, []byte{0xde, 0xad, 0, 0xbe, 0xef})
	must(t, err)
	equal(t, got, tok)
	got, err = s.GetToken(ctx, tok.ID)
	must(t, err)
	equal(t, got, tok)
	_, err = s.GetToken(ctx, "missing")
	wantErr(t, err, store.ErrNotFound)

	agentTok := &store.Token{ID: "t-agent", Hash: []byte("agent"), Kind: store.TokenAgent, AgentID: "a1"}
	must(t, s.CreateToken(ctx, agentTok))
	if agentTok.ID != "t-agent" {
		t.Fatalf("CreateToken replaced the caller's ID with %q", agentTok.ID)
	}
	got, err = s.GetTokenByHash(ctx, []byte("agent"))
	must(t, err)
	equal(t, got, agentTok)
	if got.Scopes != nil || got.ExpiresAt != nil || got.RevokedAt != nil {
		t.Fatalf("sparse token read back as %+v", got)
	}

	_, err = s.GetTokenByHash(ctx, []byte("missing"))
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.CreateToken(ctx, &store.Token{Hash: []byte("agent"), Kind: store.TokenUser}), store.ErrAlreadyExists)
	wantErr(t, s.CreateToken(ctx, &store.Token{ID: "t-agent", Hash: []byte("other"), Kind: store.TokenUser}), store.ErrAlreadyExists)
	if err := s.CreateToken(ctx, &store.Token{Kind: store.TokenUser}); err == nil {
		t.Fatal("CreateToken accepted an empty hash")
	}

	at := oddTime()
	must(t, s.RevokeToken(ctx, tok.ID, at))
	got, err = s.GetTokenByHash(ctx, tok.Hash)
	must(t, err)
	if got.RevokedAt == nil || *got.RevokedAt != norm(at) {
		t.Fatalf("RevokedAt = %v, want %v", got.RevokedAt, norm(at))
	}
	// Only RevokedAt changed, and GetToken sees it too.
	revoked := *tok
	revokedAt := norm(at)
	revoked.RevokedAt = &revokedAt
	equal(t, got, &revoked)
	got, err = s.GetToken(ctx, tok.ID)
	must(t, err)
	equal(t, got, &revoked)
	// Revoking again keeps the first time.
	must(t, s.RevokeToken(ctx, tok.ID, at.Add(time.Hour)))
	got, err = s.GetTokenByHash(ctx, tok.Hash)
	must(t, err)
	if *got.RevokedAt != norm(at) {
		t.Fatalf("second revoke moved RevokedAt to %v", *got.RevokedAt)
	}
	wantErr(t, s.RevokeToken(ctx, "missing", at), store.ErrNotFound)
}

// testTokenAndUser: a token read with its user in one call, as a request
// is authenticated; revoked tokens too, nothing for a missing token or a
// token whose user does not exist.
func testTokenAndUser(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := &store.User{ID: "u-join", Name: "Joan", Email: "joan@example.com", Role: "member", CreatedAt: oddTime()}
	must(t, s.CreateUser(ctx, u))
	other := &store.User{ID: "u-other", Name: "Other", Role: "viewer"}
	must(t, s.CreateUser(ctx, other))
	exp := oddTime().Add(time.Hour)
	tok := &store.Token{Hash: []byte("join-hash"), Kind: store.TokenUser, UserID: u.ID, ProjectID: "p1",
		Scopes: []string{"project:read"}, Name: "ci", ExpiresAt: &exp}
	must(t, s.CreateToken(ctx, tok))
	must(t, s.CreateToken(ctx, &store.Token{Hash: []byte("other-hash"), Kind: store.TokenUser, UserID: other.ID}))

	gotT, gotU, err := s.GetTokenAndUser(ctx, []byte("join-hash"))
	must(t, err)
	equal(t, gotT, tok)
	equal(t, gotU, u)
	byHash, err := s.GetTokenByHash(ctx, tok.Hash)
	must(t, err)
	equal(t, gotT, byHash)

	at := oddTime()
	must(t, s.RevokeToken(ctx, tok.ID, at))
	gotT, _, err = s.GetTokenAndUser(ctx, tok.Hash)
	must(t, err)
	if gotT.RevokedAt == nil || *gotT.RevokedAt != norm(at) {
		t.Fatalf("revoked token read back with RevokedAt %v", gotT.RevokedAt)
	}

	_, _, err = s.GetTokenAndUser(ctx, []byte("missing"))
	wantErr(t, err, store.ErrNotFound)
	must(t, s.CreateToken(ctx, &store.Token{Hash: []byte("orphan"), Kind: store.TokenUser, UserID: "u-gone"}))
	_, _, err = s.GetTokenAndUser(ctx, []byte("orphan"))
	wantErr(t, err, store.ErrNotFound)
	must(t, s.CreateToken(ctx, &store.Token{Hash: []byte("agent-join"), Kind: store.TokenAgent, AgentID: "a1"}))
	_, _, err = s.GetTokenAndUser(ctx, []byte("agent-join"))
	wantErr(t, err, store.ErrNotFound)
}

// testListTokens: a user's tokens, newest first, revoked and expired ones
// included, without hashes; nobody else's.
func testListTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	list := func(userID string) []*store.Token {
		t.Helper()
		ts, err := s.ListTokens(ctx, userID)
		must(t, err)
		return ts
	}
	equal(t, list("u1"), []*store.Token{})

	t0 := oddTime().Add(-24 * time.Hour)
	past := t0.Add(-time.Minute)
	mk := func(id, userID string, created time.Time) *store.Token {
		t.Helper()
		tok := &store.Token{ID: id, Hash: []byte("hash-" + id), Kind: store.TokenUser, UserID: userID,
			Scopes: []string{"projects:read"}, Name: id, CreatedAt: created}
		if id == "t-expired" {
			tok.ExpiresAt = &past
		}
		must(t, s.CreateToken(ctx, tok))
		return tok
	}
	// Created out of order; t-tie-a and t-tie-b share a creation time and
	// come in ID order, descending.
	mid := mk("t-mid", "u1", t0.Add(time.Hour))
	old := mk("t-old", "u1", t0)
	tieA := mk("t-tie-a", "u1", t0.Add(2*time.Hour))
	mk("t-other", "u2", t0.Add(3*time.Hour))
	newest := mk("t-expired", "u1", t0.Add(4*time.Hour))
	tieB := mk("t-tie-b", "u1", t0.Add(2*time.Hour))
	must(t, s.CreateToken(ctx, &store.Token{ID: "t-agent", Hash: []byte("agent"), Kind: store.TokenAgent, AgentID: "a1"}))
	// A generated ID and the current time: the newest of all.
	gen := &store.Token{Hash: []byte("generated"), Kind: store.TokenUser, UserID: "u1"}
	must(t, s.CreateToken(ctx, gen))
	must(t, s.RevokeToken(ctx, mid.ID, t0))
	revokedAt := norm(t0)
	mid.RevokedAt = &revokedAt

	want := []*store.Token{gen, newest, tieB, tieA, mid, old}
	for i, tok := range want {
		c := *tok
		c.Hash = nil
		want[i] = &c
	}
	got := list("u1")
	tokenID := func(t *store.Token) string { return t.ID }
	equal(t, ids(got, tokenID), ids(want, tokenID))
	equal(t, got, want)
	if len(list("u2")) != 1 {
		t.Fatalf("ListTokens(u2) = %+v, want t-other", list("u2"))
	}
	// Agent tokens have no user: "" lists nothing.
	equal(t, list(""), []*store.Token{})
	equal(t, list("nobody"), []*store.Token{})
}

func testJoinTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := oddTime()
	jt := &store.JoinToken{Hash: []byte("join-1"), Name: "ci-runner", CreatedBy: "admin", ExpiresAt: now.Add(time.Hour)}
	must(t, s.CreateJoinToken(ctx, jt))
	if jt.CreatedAt.IsZero() || jt.ExpiresAt != norm(now.Add(time.Hour)) || jt.UsedAt != nil {
		t.Fatalf("CreateJoinToken did not fill in and normalise: %+v", jt)
	}
	wantErr(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte("join-1"), ExpiresAt: now}), store.ErrAlreadyExists)

	got, err := s.ConsumeJoinToken(ctx, []byte("join-1"), now)
	must(t, err)
	want := *jt
	used := norm(now)
	want.UsedAt = &used
	equal(t, got, &want)
	_, err = s.ConsumeJoinToken(ctx, []byte("join-1"), now)
	wantErr(t, err, store.ErrTokenUsed)

	// Expired: at the expiry instant and after it.
	must(t, s.CreateJoinToken(ctx, &store.JoinToken{Hash: []byte("join-2"), ExpiresAt: now}))
	_, err = s.ConsumeJoinToken(ctx, []byte("join-2"), now)
	wantErr(t, err, store.ErrTokenUsed)
	_, err = s.ConsumeJoinToken(ctx, []byte("join-2"), now.Add(time.Second))
	wantErr(t, err, store.ErrTokenUsed)
	// ... but not a microsecond before it.
	got, err = s.ConsumeJoinToken(ctx, []byte("join-2"), now.Add(-time.Microsecond))
	must(t, err)
	if got.UsedAt == nil {
		t.Fatal("consumed token has no UsedAt")
	}

	_, err = s.ConsumeJoinToken(ctx, []byte("missing"), now)
	wantErr(t, err, store.ErrNotFound)
}

func testSettings(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.GetSetting(ctx, "limits")
	wantErr(t, err, store.ErrNotFound)

	must(t, s.PutSetting(ctx, "limits", []byte(`{"max_agents_per_broker": 10}`)))
	must(t, s.PutSetting(ctx, "hub_settings", []byte(`{"a":1}`)))
	got, err := s.GetSetting(ctx, "limits")
	must(t, err)
	equal(t, string(got), `{"max_agents_per_broker": 10}`)

	must(t, s.PutSetting(ctx, "limits", []byte(`{}`)))
	got, err = s.GetSetting(ctx, "limits")
	must(t, err)
	equal(t, string(got), `{}`)
	got, err = s.GetSetting(ctx, "hub_settings")
	must(t, err)
	equal(t, string(got), `{"a":1}`)
}

func testPing(t *testing.T, s store.Store) {
	must(t, s.Ping(t.Context()))
}

// testZeroTimes: an optional time that is set reads back set, the zero
// instant included, as it did before the stores were merged: a token
// revoked or expiring at the zero time must not read back as never
// revoked or never expiring, nor a join token used at it as unused.
func testZeroTimes(t *testing.T, s store.Store) {
	ctx := t.Context()
	var zero time.Time
	tok := &store.Token{Hash: []byte("zero-times"), Kind: store.TokenUser, UserID: "u1", ExpiresAt: &zero, RevokedAt: &zero}
	must(t, s.CreateToken(ctx, tok))
	got, err := s.GetToken(ctx, tok.ID)
	must(t, err)
	if got.ExpiresAt == nil || got.RevokedAt == nil {
		t.Fatalf("token created expiring and revoked at the zero time read back with ExpiresAt %v, RevokedAt %v", got.ExpiresAt, got.RevokedAt)
	}
	equal(t, got, tok)

	other := &store.Token{Hash: []byte("revoked-at-zero"), Kind: store.TokenUser, UserID: "u1"}
	must(t, s.CreateToken(ctx, other))
	must(t, s.RevokeToken(ctx, other.ID, zero))
	got, err = s.GetTokenByHash(ctx, other.Hash)
	must(t, err)
	if got.RevokedAt == nil || !got.RevokedAt.IsZero() {
		t.Fatalf("token revoked at the zero time read back with RevokedAt %v", got.RevokedAt)
	}

	jt := &store.JoinToken{Hash: []byte("used-at-zero"), Name: "j", ExpiresAt: time.Now().Add(time.Hour), UsedAt: &zero}
	must(t, s.CreateJoinToken(ctx, jt))
	_, err = s.ConsumeJoinToken(ctx, jt.Hash, time.Now())
	wantErr(t, err, store.ErrTokenUsed)
}
