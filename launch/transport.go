package launch

import (
	"net/http"
	"os"

	"github.com/scion-go/scion/client/idtoken"
	"github.com/scion-go/scion/config"
)

// hubHTTPClient is the HTTP client of a broker's requests to its Hub (the
// control channel's upgrade, at every reconnect, and its secret fetches):
// with the connection's transport auth (transportMode and
// transportAudience, under SCION_TRANSPORT_MODE and
// SCION_TRANSPORT_AUDIENCE), an ID token on each; nil without one, so
// the broker's default applies.
func hubHTTPClient(conn *config.BrokerConnection, hubURL string) (*http.Client, error) {
	a, err := idtoken.New(idtoken.Settings{Mode: conn.TransportMode, Audience: conn.TransportAudience}, hubURL, os.Getenv)
	if err != nil || a == nil {
		return nil, err
	}
	return &http.Client{Transport: &idtoken.Transport{Auth: a}}, nil
}
