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

	agentTok := &store.Token{ID: "t-agent", Hash: []byte("agent"), Kind: store.TokenAgent, AgentID: "a1"}
	must(t, s.CreateToken(ctx, agentTok))
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
	// Revoking again keeps the first time.
	must(t, s.RevokeToken(ctx, tok.ID, at.Add(time.Hour)))
	got, err = s.GetTokenByHash(ctx, tok.Hash)
	must(t, err)
	if *got.RevokedAt != norm(at) {
		t.Fatalf("second revoke moved RevokedAt to %v", *got.RevokedAt)
	}
	wantErr(t, s.RevokeToken(ctx, "missing", at), store.ErrNotFound)
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
