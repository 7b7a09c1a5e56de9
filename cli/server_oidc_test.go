package cli

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/scion-go/scion/config"
)

func TestServerOIDCConfig(t *testing.T) {
	home := setHome(t)
	if c, err := (&oidcFlags{}).config(); c != nil || err != nil {
		t.Fatalf("no OIDC settings: %+v %v", c, err)
	}
	if _, err := (&oidcFlags{clientID: "x"}).config(); !isUsage(err) {
		t.Fatalf("a client ID without an issuer: %v", err)
	}

	secret := filepath.Join(home, "oidc-secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := loadSettings(t)
	st.Server.Hub.OIDC = &config.OIDCSettings{Issuer: "https://id.example.com", ClientID: "scion-hub",
		ClientSecretFile: secret, DefaultRole: "member", AdminEmails: []string{"a@example.com"}}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	c, err := (&oidcFlags{}).config()
	if err != nil || c.IssuerURL != "https://id.example.com" || c.ClientID != "scion-hub" || c.ClientSecret != "s3cret" ||
		c.DefaultRole != "member" || !slices.Equal(c.AdminEmails, []string{"a@example.com"}) {
		t.Fatalf("from settings: %+v %v", c, err)
	}
	// Flags win over settings.
	c, err = (&oidcFlags{issuer: "https://other.example.com", defaultRole: "viewer", adminEmails: []string{"b@example.com", "c@example.com"}}).config()
	if err != nil || c.IssuerURL != "https://other.example.com" || c.ClientID != "scion-hub" || c.DefaultRole != "viewer" ||
		!slices.Equal(c.AdminEmails, []string{"b@example.com", "c@example.com"}) {
		t.Fatalf("flags over settings: %+v %v", c, err)
	}
	if _, err := (&oidcFlags{defaultRole: "owner"}).config(); !isUsage(err) {
		t.Fatalf("bad role: %v", err)
	}
	if _, err := (&oidcFlags{secretFile: filepath.Join(home, "nope")}).config(); err == nil {
		t.Fatal("a missing secret file was accepted")
	}
	// The flags exist on scion server start, and no flag takes the secret itself.
	start := newServerStartCmd()
	for _, name := range []string{"oidc-issuer", "oidc-client-id", "oidc-client-secret-file", "oidc-default-role", "oidc-admin-email"} {
		if start.Flags().Lookup(name) == nil {
			t.Errorf("no --%s", name)
		}
	}
	if start.Flags().Lookup("oidc-client-secret") != nil {
		t.Error("a flag takes the client secret on the command line")
	}
}
