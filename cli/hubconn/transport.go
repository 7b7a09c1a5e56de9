package hubconn

import (
	"fmt"
	"net/http"
	"os"

	"github.com/scion-go/scion/client/idtoken"
	"github.com/scion-go/scion/config"
)

// transportFor is the transport auth of requests to t's Hub: the
// connection settings conn when given (register's and join's flags),
// else those of this machine's stored broker connection to that Hub (a
// Hub behind IAP needs the token on every request, the admin CLI's as
// much as the broker's), with SCION_TRANSPORT_MODE and
// SCION_TRANSPORT_AUDIENCE over either. Nil: requests go out as they are.
func transportFor(t *Target, conn *idtoken.Settings, getenv func(string) string) (*idtoken.Auth, error) {
	var s idtoken.Settings
	switch {
	case conn != nil:
		s = *conn
	default:
		// The environment's values go over these (idtoken.Effective), as
		// they do for the broker. A credentials file this user cannot
		// read (root's, after a sudo register) stops no command:
		// requests go without stored transport settings, which the
		// environment can give.
		if creds, err := config.LoadBrokerCredentials(); err == nil {
			s = StoredTransport(creds, t.URL)
		} else {
			fmt.Fprintf(os.Stderr, "warning: %v: its transport settings are not used (SCION_TRANSPORT_MODE and SCION_TRANSPORT_AUDIENCE give them)\n", err)
		}
	}
	return idtoken.New(s, t.URL, getenv)
}

// StoredTransport is the transport settings stored for hubURL: those of
// the regular broker's connection, else of any flat instance's (one Hub,
// one guard).
func StoredTransport(creds *config.BrokerCredentials, hubURL string) idtoken.Settings {
	c := creds.ForHub(hubURL)
	if c == nil {
		for _, x := range creds.Connections {
			if SameURL(x.HubEndpoint, hubURL) && x.TransportMode != "" {
				c = x
				break
			}
		}
	}
	if c == nil {
		return idtoken.Settings{}
	}
	return idtoken.Settings{Mode: c.TransportMode, Audience: c.TransportAudience}
}

// WithTransport sets t's transport auth: conn overrides the stored
// connection's settings (nil: the stored ones). Load calls it with nil.
func WithTransport(t *Target, conn *idtoken.Settings) error {
	a, err := transportFor(t, conn, os.Getenv)
	if err != nil {
		return err
	}
	t.Transport = a
	return nil
}

func (t *Target) httpClient() *http.Client {
	switch {
	case t.Transport != nil:
		return &http.Client{Transport: &idtoken.Transport{Base: t.tlsBase, Auth: t.Transport}}
	case t.tlsBase != nil:
		return &http.Client{Transport: t.tlsBase}
	}
	return nil
}
