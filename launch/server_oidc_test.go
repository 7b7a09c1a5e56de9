package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/scion-go/scion/config"
)

func TestServerOIDCConfig(t *testing.T) {
	home := setHome(t)
	if c, err := oidcConfig(config.OIDCSettings{}); c != nil || err != nil {
		t.Fatalf("no OIDC settings: %+v %v", c, err)
	}
	if _, err := oidcConfig(config.OIDCSettings{ClientID: "x"}); !isUsage(err) {
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
	c, err := oidcConfig(config.OIDCSettings{})
	if err != nil || c.IssuerURL != "https://id.example.com" || c.ClientID != "scion-hub" || c.ClientSecret != "s3cret" ||
		c.DefaultRole != "member" || !slices.Equal(c.AdminEmails, []string{"a@example.com"}) {
		t.Fatalf("from settings: %+v %v", c, err)
	}
	// Flags win over settings.
	c, err = oidcConfig(config.OIDCSettings{Issuer: "https://other.example.com", DefaultRole: "viewer", AdminEmails: []string{"b@example.com", "c@example.com"}})
	if err != nil || c.IssuerURL != "https://other.example.com" || c.ClientID != "scion-hub" || c.DefaultRole != "viewer" ||
		!slices.Equal(c.AdminEmails, []string{"b@example.com", "c@example.com"}) {
		t.Fatalf("flags over settings: %+v %v", c, err)
	}
	if _, err := oidcConfig(config.OIDCSettings{DefaultRole: "owner"}); !isUsage(err) {
		t.Fatalf("bad role: %v", err)
	}
	if _, err := oidcConfig(config.OIDCSettings{ClientSecretFile: filepath.Join(home, "nope")}); err == nil {
		t.Fatal("a missing secret file was accepted")
	}
}
