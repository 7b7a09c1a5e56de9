package identity

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/sqlite"
)

// TestPlainKeysSealedAtStart: a database from an older version holds the
// agent-token key and broker secrets plain. The first start with a secrets
// key seals them in place, keeping their values (tokens and brokers keep
// working); a start without that key then refuses, naming the flag.
func TestPlainKeysSealedAtStart(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "hub.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	plainKey := bytes.Repeat([]byte{7}, 32)
	if err := st.PutSetting(ctx, settingTokenKey, plainKey); err != nil {
		t.Fatal(err)
	}
	plainSecret := []byte(hex.EncodeToString(bytes.Repeat([]byte{9}, 32)))
	now := time.Now().UTC()
	if err := st.CreateBroker(ctx, &store.Broker{ID: "b-old", Name: "old", Status: api.BrokerOffline, Capabilities: []string{},
		Secret: plainSecret, CreatedBy: "admin", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	secretsKey := bytes.Repeat([]byte{1}, 32)
	// The Hub builds its Service over the store wrapped by authstore,
	// as here; New seals at start, before anything is served.
	start := func(key []byte) (*Service, error) {
		return New(ctx, Options{Store: authstore.New(st), Logger: slog.New(slog.DiscardHandler), SecretsKey: key})
	}
	s, err := start(secretsKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.tokenKey, plainKey) {
		t.Fatal("sealing changed the agent-token key: every agent token would die")
	}
	v, _ := st.GetSetting(ctx, settingTokenKey)
	b, _ := st.GetBroker(ctx, "b-old")
	if !isSealed(v) || !isSealed(b.Secret) || bytes.Contains(b.Secret, plainSecret) {
		t.Fatalf("not sealed: token key %v, broker secret %v", isSealed(v), isSealed(b.Secret))
	}
	if got, err := s.brokerSecret(b); err != nil || !bytes.Equal(got, plainSecret) {
		t.Fatalf("broker secret after sealing: %v", err)
	}
	// A restart with the same key reads the same keys.
	s2, err := start(secretsKey)
	if err != nil || !bytes.Equal(s2.tokenKey, plainKey) {
		t.Fatalf("restart: %v", err)
	}
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{2}, 32)} {
		if _, err := start(key); err == nil || !strings.Contains(err.Error(), "--secrets-key-file") {
			t.Errorf("start with secrets key %x: err %v, want a refusal naming --secrets-key-file", key, err)
		}
	}
}

// TestAgentTokenExpiry: a token says when it expires; one of an older Hub
// says nothing and lasts one lifetime from its issue, so it does not live
// forever.
func TestAgentTokenExpiry(t *testing.T) {
	s := &Service{opts: Options{AgentTokenTTL: 24 * time.Hour}}
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name  string
		c     api.AgentTokenClaims
		valid bool
	}{
		{"fresh", api.AgentTokenClaims{IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}, true},
		{"expired", api.AgentTokenClaims{IssuedAt: now.Add(-2 * time.Hour).Unix(), ExpiresAt: now.Add(-time.Second).Unix()}, false},
		{"at expiry", api.AgentTokenClaims{IssuedAt: now.Add(-time.Hour).Unix(), ExpiresAt: now.Unix()}, false},
		{"old Hub's, within a lifetime", api.AgentTokenClaims{IssuedAt: now.Add(-23 * time.Hour).Unix()}, true},
		{"old Hub's, past a lifetime", api.AgentTokenClaims{IssuedAt: now.Add(-25 * time.Hour).Unix()}, false},
	} {
		if got := now.Before(s.agentTokenExpiry(tc.c)); got != tc.valid {
			t.Errorf("%s: valid %v, want %v", tc.name, got, tc.valid)
		}
	}
}
