package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
)

// oidcFlags are scion server start's --oidc-* flags. Each overrides its
// server.hub.oidc.* key in settings.yaml. There is no flag for the client
// secret itself: a command line is visible to every user of the host.
type oidcFlags struct {
	issuer      string
	clientID    string
	secretFile  string
	defaultRole string
	adminEmails []string
}

func (f *oidcFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.issuer, "oidc-issuer", "", "OIDC issuer URL; turns on user sign-in (scion hub auth login) through that provider (settings: server.hub.oidc.issuer)")
	fl.StringVar(&f.clientID, "oidc-client-id", "", "the Hub's client ID at the OIDC provider (settings: server.hub.oidc.client_id)")
	fl.StringVar(&f.secretFile, "oidc-client-secret-file", "", "file holding the Hub's OIDC client secret, if it has one (settings: server.hub.oidc.client_secret_file)")
	fl.StringVar(&f.defaultRole, "oidc-default-role", "", "Hub role of a user's first sign-in: viewer, member or admin (default viewer; settings: server.hub.oidc.default_role)")
	fl.StringArrayVar(&f.adminEmails, "oidc-admin-email", nil, "verified email that gets the admin role at its first sign-in; repeatable (settings: server.hub.oidc.admin_emails)")
}

// oidcConfig merges the flags over settings.yaml; nil when no issuer is
// set (OIDC sign-in off).
func (f *oidcFlags) config() (*hub.OIDCConfig, error) {
	st, err := config.LoadSettings()
	if err != nil {
		return nil, err
	}
	var s config.OIDCSettings
	if st.Server.Hub.OIDC != nil {
		s = *st.Server.Hub.OIDC
	}
	pick := func(flag, setting string) string {
		if flag != "" {
			return flag
		}
		return setting
	}
	c := &hub.OIDCConfig{
		IssuerURL:   strings.TrimSpace(pick(f.issuer, s.Issuer)),
		ClientID:    strings.TrimSpace(pick(f.clientID, s.ClientID)),
		DefaultRole: strings.TrimSpace(pick(f.defaultRole, s.DefaultRole)),
		AdminEmails: s.AdminEmails,
	}
	if len(f.adminEmails) > 0 {
		c.AdminEmails = f.adminEmails
	}
	secretFile := pick(f.secretFile, s.ClientSecretFile)
	if c.IssuerURL == "" {
		if c.ClientID != "" || secretFile != "" || c.DefaultRole != "" || len(c.AdminEmails) > 0 {
			return nil, usageErrorf("OIDC settings without an issuer: set --oidc-issuer (or server.hub.oidc.issuer)")
		}
		return nil, nil
	}
	if secretFile != "" {
		b, err := os.ReadFile(expandHome(secretFile))
		if err != nil {
			return nil, fmt.Errorf("read the OIDC client secret: %w", err)
		}
		c.ClientSecret = strings.TrimSpace(string(b))
		if c.ClientSecret == "" {
			return nil, fmt.Errorf("the OIDC client secret file %s is empty", secretFile)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, usageErr(err)
	}
	return c, nil
}

// expandHome turns a leading ~/ into the user's home directory (settings
// files are not expanded by a shell).
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}
