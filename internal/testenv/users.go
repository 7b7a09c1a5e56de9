package testenv

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/scion-go/scion/store"
)

// UserToken makes a user with the Hub role role (when there is none with
// that ID yet) and returns a bearer token for it, as a sign-in would give.
func (e *Env) UserToken(t testing.TB, id, role string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Store.GetUser(ctx, id); err != nil {
		if err := e.Store.CreateUser(ctx, &store.User{ID: id, Name: id, Role: role, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "scu_" + hex.EncodeToString(b)
	sum := sha256.Sum256([]byte(tok))
	if err := e.Store.CreateToken(ctx, &store.Token{ID: id + "-" + hex.EncodeToString(b[:4]), Hash: sum[:], Kind: store.TokenUser,
		UserID: id, Name: "test", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	return tok
}
