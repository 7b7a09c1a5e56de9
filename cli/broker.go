package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/hubconn"
	"github.com/scion-go/scion/client/idtoken"
	"github.com/scion-go/scion/config"
)

func newBrokerCmd(a *app, d Daemons) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "runtime-broker",
		Short: "Run and administer this machine's Runtime Broker",
		Long: `A Runtime Broker runs agent containers for a Hub. 'start' runs the broker
process, which connects to server.broker.hub_endpoint from the global
settings. register, join and the other administration commands talk to the
Hub the CLI selects (--hub, or the hub list's current hub): add the Hub with
'scion hub add <name> <hub-url> --use' and sign in first.

A broker can serve several Hubs; its credentials are stored per Hub in
broker-credentials.yaml.`,
		Example: `  scion runtime-broker register
  scion runtime-broker start
  scion runtime-broker provide --project web`,
	})
	c.AddCommand(newBrokerStartCmd(d), newBrokerRegisterCmd(a), newBrokerJoinCmd(a),
		newBrokerProvideCmd(a, true), newBrokerProvideCmd(a, false), newBrokerStatusCmd(a),
		newBrokerDeregisterCmd(a), newBrokerPlanSplitCmd(a))
	return c
}

func newBrokerRegisterCmd(a *app) *cobra.Command {
	var name, instance string
	var autoProvide, force bool
	var tf transportFlags
	c := &cobra.Command{
		Use:   "register",
		Short: "Register this machine as a Runtime Broker of the selected Hub",
		Long: `Register this machine as a Runtime Broker, acting as the signed-in user on
the Hub the CLI selects. The credentials the Hub issues are saved in
broker-credentials.yaml for that Hub, and server.broker.hub_endpoint is set
to the Hub when it is unset (except on a host that runs a workstation Hub,
whose broker is already connected to it).

With --instance <key>, it registers that flat Runtime Broker instance of
server.broker.instances instead (an experiment the Hub's admin turns on with
'scion hub settings set --experiment hub.flat_runtime_brokers=on'): under the
entry's name and with its runtime target (a Kubernetes target's unset context
is the kubeconfig's current context, its unset namespace "default"). The
instance's own credentials are saved under its key, and the entry's
maxAgents, when set, becomes the broker's limit. With the experiment off the
instance is registered without its target and not activated: its
credentials are saved all the same, and 'scion runtime-broker start'
activates it as soon as the experiment is turned on, without a restart.
` + transportHelp,
		Example: `  scion runtime-broker register
  scion runtime-broker register --name gpu-box --auto-provide --hub team
  scion runtime-broker register --instance k8s-batch
  scion runtime-broker register --hub https://hub.example.com \
      --transport-mode iap --transport-audience 1234-abc.apps.googleusercontent.com`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.useTransportFlags(tf); err != nil {
				return err
			}
			if instance != "" {
				if name != "" {
					return usageErrorf("--name and --instance: an instance registers under its entry's name")
				}
				return a.registerInstance(cmd, instance, autoProvide, force)
			}
			t, cl, err := a.connectBroker()
			if err != nil {
				return err
			}
			creds, settings, err := loadBrokerFiles()
			if err != nil {
				return err
			}
			if name, err = brokerName(name, settings); err != nil {
				return err
			}
			if err := checkNotRegistered(creds, t, force); err != nil {
				return err
			}
			bc, err := cl.RegisterBroker(cmd.Context(), api.RegisterBrokerRequest{Name: name, AutoProvide: autoProvide})
			if err != nil {
				return err
			}
			return a.saveRegistration(cmd, t, creds, settings, bc)
		},
	}
	c.Flags().StringVar(&name, "name", "", "broker name (default: server.broker.name, else the host name)")
	c.Flags().BoolVar(&autoProvide, "auto-provide", false, "provide for new projects automatically")
	c.Flags().BoolVar(&force, "force", false, "register again even if a registration for this Hub is stored (replacing it)")
	c.Flags().StringVar(&instance, "instance", "", "register the flat instance with this key of server.broker.instances")
	tf.add(c)
	return c
}

func newBrokerJoinCmd(a *app) *cobra.Command {
	var name, token string
	var force bool
	var tf transportFlags
	c := &cobra.Command{
		Use:   "join --token <token>",
		Short: "Register this machine as a Runtime Broker with a join token",
		Long: `Register this machine as a Runtime Broker with a one-time join token that
an admin created with 'scion hub brokers join-token create'; no sign-in is
needed. A token made for a name ('join-token create --name') registers that
name. Credentials and server.broker.hub_endpoint are saved as by register.
` + transportHelp,
		Example: `  scion runtime-broker join --hub https://hub.example.com --token sjt_...`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if token == "" {
				return usageErrorf("--token is required")
			}
			if err := a.useTransportFlags(tf); err != nil {
				return err
			}
			t, cl, err := a.connectBroker()
			if err != nil {
				return err
			}
			creds, settings, err := loadBrokerFiles()
			if err != nil {
				return err
			}
			if name, err = brokerName(name, settings); err != nil {
				return err
			}
			if err := checkNotRegistered(creds, t, force); err != nil {
				return err
			}
			a.ownCredential = true
			bc, err := cl.JoinBroker(cmd.Context(), token, name)
			if err != nil {
				return err
			}
			if bc.Name != name {
				fmt.Fprintf(cmd.ErrOrStderr(), "The join token was made for the name %s: registered under that name, not %s.\n", bc.Name, name)
			}
			return a.saveRegistration(cmd, t, creds, settings, bc)
		},
	}
	c.Flags().StringVar(&token, "token", "", "join token (required)")
	c.Flags().StringVar(&name, "name", "", "broker name, used when the token was made for none (default: server.broker.name, else the host name)")
	c.Flags().BoolVar(&force, "force", false, "join even if a registration for this Hub is stored (replacing it)")
	tf.add(c)
	return c
}

func loadBrokerFiles() (*config.BrokerCredentials, *config.Settings, error) {
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		return nil, nil, err
	}
	settings, err := config.LoadSettings()
	if err != nil {
		return nil, nil, err
	}
	return creds, settings, nil
}

// brokerName is --name, else server.broker.name, else the short host name.
func brokerName(flag string, s *config.Settings) (string, error) {
	n := firstNonEmpty(flag, s.Server.Broker.Name)
	if n == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", usageErrorf("cannot read the host name (%v): pass --name", err)
		}
		// Host names are case-insensitive; broker names are lower case.
		n, _, _ = strings.Cut(strings.ToLower(h), ".")
		if validateName("broker", n) != nil {
			return "", usageErrorf("the host name %q is not a valid broker name: pass --name", h)
		}
	}
	return n, validateName("broker", n)
}

// checkNotRegistered refuses a second registration with the same Hub:
// replacing the stored credentials would orphan the first broker record
// (and its agents) on the Hub.
func checkNotRegistered(creds *config.BrokerCredentials, t *hubconn.Target, force bool) error {
	if c := creds.ForHub(t.URL); c != nil && !force {
		return fmt.Errorf("this machine is already registered with %s as %s (%s); deregister it first, or pass --force to replace the stored credentials",
			t.URL, c.BrokerName, c.BrokerID)
	}
	return nil
}

// registration is what register and join print with -o json; the secret
// is never printed.
type registration struct {
	BrokerID         string `json:"brokerId"`
	Name             string `json:"name"`
	Connection       string `json:"connection"`
	HubEndpoint      string `json:"hubEndpoint"`
	CredentialsFile  string `json:"credentialsFile"`
	HubEndpointSaved bool   `json:"hubEndpointSaved"`
	// BrokerHubEndpoint is server.broker.hub_endpoint after the command:
	// the Hub the broker process will connect to.
	BrokerHubEndpoint string `json:"brokerHubEndpoint,omitempty"`
}

// saveRegistration stores the issued credentials for the CLI's Hub and sets
// server.broker.hub_endpoint when it is unset and no workstation Hub runs
// on this host (that Hub's co-located broker must keep pointing at it).
func (a *app) saveRegistration(cmd *cobra.Command, t *hubconn.Target, creds *config.BrokerCredentials, s *config.Settings, bc *api.BrokerCredentials) error {
	r, ws, err := storeRegistration(t, creds, s, bc, "", nil, a.transport, a.insecureHTTP)
	if err != nil {
		return err
	}
	if a.json() {
		return a.render(cmd.OutOrStdout(), r)
	}
	printRegistration(cmd.OutOrStdout(), t, s, ws, r)
	fmt.Fprintf(cmd.OutOrStdout(), "Next: 'scion runtime-broker start', then 'scion runtime-broker provide --project <project>'.\n")
	return nil
}

// storeRegistration saves the credentials the Hub issued, as the
// connection of the flat instance with key instance ("" the regular
// broker), and server.broker.hub_endpoint as saveRegistration says.
//
// tr is the transport settings given with the command; nil keeps those of
// the connection it replaces (a --force registration through the same
// guard).
func storeRegistration(t *hubconn.Target, creds *config.BrokerCredentials, s *config.Settings, bc *api.BrokerCredentials, instance string, target *config.RuntimeTarget, tr *idtoken.Settings, insecureHTTP bool) (registration, *config.Workstation, error) {
	conn := &config.BrokerConnection{
		Name:          connectionName(creds, bc.Name, t.URL),
		Instance:      instance,
		RuntimeTarget: target,
		HubEndpoint:   t.URL,
		BrokerID:      bc.BrokerID,
		BrokerName:    bc.Name,
		Secret:        bc.Secret,
	}
	switch old := creds.ForInstance(t.URL, instance); {
	case tr != nil:
		conn.TransportMode, conn.TransportAudience = tr.Mode, tr.Audience
	case old != nil:
		conn.TransportMode, conn.TransportAudience = old.TransportMode, old.TransportAudience
	}
	// The trust the registration itself used: the broker checks the
	// Hub's certificate against the same CA.
	conn.CAFile, conn.InsecureHTTP = t.CAFile, insecureHTTP
	creds.Put(conn)
	if err := creds.Save(); err != nil {
		return registration{}, nil, fmt.Errorf("registered broker %s (%s) but could not save its credentials: %w", bc.Name, bc.BrokerID, err)
	}
	ws, err := config.LoadWorkstation()
	if err != nil {
		return registration{}, nil, err
	}
	r := registration{BrokerID: bc.BrokerID, Name: bc.Name, Connection: conn.Name, HubEndpoint: t.URL,
		CredentialsFile: config.BrokerCredentialsPath()}
	if ws == nil && s.Server.Broker.HubEndpoint == "" {
		s.Server.Broker.HubEndpoint = t.URL
		if err := s.Save(); err != nil {
			return registration{}, nil, err
		}
		r.HubEndpointSaved = true
	}
	r.BrokerHubEndpoint = s.Server.Broker.HubEndpoint
	return r, ws, nil
}

// printRegistration tells what storeRegistration did.
func printRegistration(w io.Writer, t *hubconn.Target, s *config.Settings, ws *config.Workstation, r registration) {
	fmt.Fprintf(w, "Registered Runtime Broker %s (%s) with %s.\n", r.Name, r.BrokerID, t.URL)
	fmt.Fprintf(w, "Credentials saved to %s (connection %s).\n", r.CredentialsFile, r.Connection)
	switch {
	case r.HubEndpointSaved:
		fmt.Fprintf(w, "Set server.broker.hub_endpoint to %s in %s.\n", t.URL, config.SettingsPath())
	case ws != nil:
		fmt.Fprintf(w, "Left server.broker.hub_endpoint unchanged: this host runs a workstation Hub.\n")
	case !hubconn.SameURL(s.Server.Broker.HubEndpoint, t.URL):
		fmt.Fprintf(w, "Note: the Runtime Broker process connects to %s (server.broker.hub_endpoint), not to %s.\n",
			s.Server.Broker.HubEndpoint, t.URL)
	}
}

// connectionName is the broker name, or name@hub-host when another Hub's
// connection already uses that name, so that --name stays unambiguous.
func connectionName(creds *config.BrokerCredentials, brokerName, hubURL string) string {
	for _, c := range creds.Connections {
		if c.Name == brokerName && !hubconn.SameURL(c.HubEndpoint, hubURL) {
			host := hubURL
			if u, err := url.Parse(hubURL); err == nil {
				host = u.Host
			}
			return brokerName + "@" + host
		}
	}
	return brokerName
}
