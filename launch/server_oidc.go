package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub/signin"
)

// oidcConfig merges the --oidc-* flags f over server.hub.oidc of
// settings.yaml; nil when no issuer is set (OIDC sign-in off).
func oidcConfig(f config.OIDCSettings) (*signin.Config, error) {
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
	c := &signin.Config{
		IssuerURL:   strings.TrimSpace(pick(f.Issuer, s.Issuer)),
		ClientID:    strings.TrimSpace(pick(f.ClientID, s.ClientID)),
		DefaultRole: strings.TrimSpace(pick(f.DefaultRole, s.DefaultRole)),
		AdminEmails: s.AdminEmails,
	}
	if len(f.AdminEmails) > 0 {
		c.AdminEmails = f.AdminEmails
	}
	secretFile := pick(f.ClientSecretFile, s.ClientSecretFile)
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
