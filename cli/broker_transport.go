package cli

import (
	"github.com/spf13/cobra"

	"github.com/scion-go/scion/cli/hubconn"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/client/hubtls"
	"github.com/scion-go/scion/client/idtoken"
)

// transportHelp is register's and join's word on transport auth.
const transportHelp = `
A Hub behind Google IAP (or a Cloud Run service that requires the invoker
role) needs an OIDC ID token on every request: --transport-mode iap with
--transport-audience set to the IAP OAuth client ID, or --transport-mode
cloudrun_invoker (the audience defaults to the Hub URL). They are saved with
this connection (transportMode and transportAudience in
broker-credentials.yaml), and the broker and the CLI carry the token on
every request to that Hub. SCION_TRANSPORT_MODE and SCION_TRANSPORT_AUDIENCE
override every connection's values. Tokens come from SCION_TRANSPORT_TOKEN_FILE,
else the cloud's metadata server, else GOOGLE_APPLICATION_CREDENTIALS (see
docs/iap.md).`

// transportFlags are --transport-mode, --transport-audience and
// --insecure-http.
type transportFlags struct {
	mode, audience string
	insecureHTTP   bool
}

func (f *transportFlags) add(c *cobra.Command) {
	c.Flags().BoolVar(&f.insecureHTTP, "insecure-http", false, "allow a plain http:// Hub that is not on loopback (tokens cross the network in the clear; saved with the connection)")
	c.Flags().StringVar(&f.mode, "transport-mode", "", "transport auth for a Hub behind IAP or Cloud Run: iap or cloudrun_invoker")
	c.Flags().StringVar(&f.audience, "transport-audience", "", "the ID token's audience: the IAP OAuth client ID (iap), the Hub URL (cloudrun_invoker, its default)")
}

// useTransportFlags checks the flags and, when given, makes connect and
// the saved connection use them.
func (a *app) useTransportFlags(f transportFlags) error {
	a.insecureHTTP = f.insecureHTTP
	if f.mode == "" && f.audience == "" {
		return nil
	}
	s := idtoken.Settings{Mode: f.mode, Audience: f.audience}
	if err := s.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	a.transport = &s
	return nil
}

// connectBroker is connect for a command that registers a broker: a
// plain http Hub that is not on loopback is refused before anything is
// sent, unless --insecure-http says otherwise (the broker would refuse
// to start on it).
func (a *app) connectBroker() (*hubconn.Target, *client.Client, error) {
	t, cl, err := a.connect()
	if err != nil {
		return nil, nil, err
	}
	if err := hubtls.CheckScheme(t.URL, a.insecureHTTP, "--insecure-http"); err != nil {
		return nil, nil, usageErr(err)
	}
	return t, cl, nil
}
