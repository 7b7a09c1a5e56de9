// Package idtoken carries an OIDC ID token on every request to a Hub that
// sits behind an identity-aware proxy (Google IAP) or a Cloud Run service
// that requires the invoker role: the transport auth of a Hub connection
// (transportMode and transportAudience in the broker's credentials file,
// SCION_TRANSPORT_MODE and SCION_TRANSPORT_AUDIENCE in the environment).
//
// The token is the machine's identity (a service account), not the
// caller's: the Hub still authenticates the caller itself (a broker's
// signature, a user's bearer token). So the token goes in the header the
// platform reads when the application uses Authorization for its own
// callers: Proxy-Authorization for IAP, X-Serverless-Authorization for
// Cloud Run. Tokens come from the sources in Sources' order, are cached
// per audience and fetched again before they expire.
//
// It imports only the standard library, as the rest of client does.
package idtoken

import (
	"fmt"
	"net/url"
	"strings"
)

// The transport modes (the spec's transportMode values).
const (
	// ModeIAP: Google Identity-Aware Proxy; the audience is the IAP
	// OAuth client ID.
	ModeIAP = "iap"
	// ModeCloudRunInvoker: a Cloud Run service that requires the invoker
	// role; the audience is the service's URL (the Hub URL by default).
	ModeCloudRunInvoker = "cloudrun_invoker"
)

// The environment variables that override every connection's settings.
const (
	EnvMode     = "SCION_TRANSPORT_MODE"
	EnvAudience = "SCION_TRANSPORT_AUDIENCE"
)

// maxAudience bounds an audience (an OAuth client ID or a URL).
const maxAudience = 512

// Settings are one Hub connection's transport auth. The zero value is
// none: requests go out as they are.
type Settings struct {
	Mode     string
	Audience string
}

// Enabled reports whether requests carry a token.
func (s Settings) Enabled() bool { return s.Mode != "" }

// Header is the request header the token goes in.
func (s Settings) Header() string {
	if s.Mode == ModeCloudRunInvoker {
		return "X-Serverless-Authorization"
	}
	return "Proxy-Authorization"
}

// Validate checks a mode and audience as register and join take them
// (flags) and as a credentials file holds them.
func (s Settings) Validate() error {
	switch s.Mode {
	case "":
		if s.Audience != "" {
			return fmt.Errorf("transport audience %q without a transport mode: set the mode (%s or %s) too", s.Audience, ModeIAP, ModeCloudRunInvoker)
		}
		return nil
	case ModeIAP:
		if s.Audience == "" {
			return fmt.Errorf("transport mode %s needs an audience: the IAP OAuth client ID (--transport-audience)", ModeIAP)
		}
	case ModeCloudRunInvoker:
	default:
		return fmt.Errorf("transport mode %q is not one of %s, %s", s.Mode, ModeIAP, ModeCloudRunInvoker)
	}
	if len(s.Audience) > maxAudience || strings.ContainsFunc(s.Audience, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("transport audience: at most %d characters, no spaces or control characters", maxAudience)
	}
	return nil
}

// Effective is the settings a connection to hubURL uses: the
// environment's mode and audience when set (each overrides every
// connection's value), else the connection's own; a cloudrun_invoker
// connection without an audience uses the Hub URL (its origin). An
// audience in the environment without a mode there leaves a connection
// with no mode of its own plain: it overrides the audiences of the
// connections that have transport auth, and connections without
// transport fields behave as before.
func Effective(conn Settings, hubURL string, getenv func(string) string) (Settings, error) {
	s := conn
	if m := strings.TrimSpace(getenv(EnvMode)); m != "" {
		if m != s.Mode {
			// Another mode's audience (an IAP client ID under
			// cloudrun_invoker) would be wrong: the mode's own default,
			// or the environment's audience, applies.
			s.Audience = ""
		}
		s.Mode = m
	}
	if a := strings.TrimSpace(getenv(EnvAudience)); a != "" && s.Mode != "" {
		s.Audience = a
	}
	if s.Mode == ModeCloudRunInvoker && s.Audience == "" {
		u, err := url.Parse(hubURL)
		if err != nil || u.Host == "" {
			return Settings{}, fmt.Errorf("transport mode %s: the Hub URL %q gives no audience", ModeCloudRunInvoker, hubURL)
		}
		s.Audience = u.Scheme + "://" + u.Host
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}
