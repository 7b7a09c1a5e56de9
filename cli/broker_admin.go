package cli

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/hubconn"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/config"
)

// localReg is one of this machine's broker registrations.
type localReg struct {
	BrokerID     string
	BrokerName   string
	HubEndpoint  string                   // "" when unknown
	Conn         *config.BrokerConnection // nil unless from broker-credentials.yaml
	FromSettings bool                     // server.broker.broker_id
}

func fromConn(c *config.BrokerConnection) *localReg {
	return &localReg{BrokerID: c.BrokerID, BrokerName: c.BrokerName, HubEndpoint: c.HubEndpoint, Conn: c}
}

func fromSettings(s *config.Settings) *localReg {
	b := s.Server.Broker
	return &localReg{BrokerID: b.BrokerID, BrokerName: b.Name, HubEndpoint: b.HubEndpoint, FromSettings: true}
}

// settingsMatch reports whether --name names the registration kept in the
// global settings.
func settingsMatch(s *config.Settings, name string) bool {
	b := s.Server.Broker
	return b.BrokerID != "" && (name == b.BrokerID || name == b.Name)
}

// brokerForHub finds the broker that provide, withdraw and status act on:
// the stored connection named by --name, else the stored connection for the
// CLI's Hub, else the registration in the global settings, else the
// workstation Hub's own broker when the CLI talks to that Hub.
func brokerForHub(t *hubconn.Target, name string) (*localReg, error) {
	creds, settings, err := loadBrokerFiles()
	if err != nil {
		return nil, err
	}
	if name != "" {
		if settingsMatch(settings, name) && len(creds.Connections) == 0 {
			return fromSettings(settings), nil
		}
		c, err := creds.Select(name)
		if err != nil {
			return nil, err
		}
		return fromConn(c), nil
	}
	if c := creds.ForHub(t.URL); c != nil {
		return fromConn(c), nil
	}
	if b := settings.Server.Broker; b.BrokerID != "" && (b.HubEndpoint == "" || hubconn.SameURL(b.HubEndpoint, t.URL)) {
		return fromSettings(settings), nil
	}
	ws, err := config.LoadWorkstation()
	if err != nil {
		return nil, err
	}
	if ws != nil && ws.BrokerID != "" && hubconn.SameURL(ws.URL, t.URL) {
		return &localReg{BrokerID: ws.BrokerID, HubEndpoint: ws.URL}, nil
	}
	return nil, fmt.Errorf("this machine has no Runtime Broker registered with %s: run 'scion runtime-broker register' (or pass --name)", t.URL)
}

// warnOtherHub prints a warning when a registration belongs to another Hub
// than the one the request goes to.
func warnOtherHub(cmd *cobra.Command, r *localReg, t *hubconn.Target) {
	if r.HubEndpoint != "" && !hubconn.SameURL(r.HubEndpoint, t.URL) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: broker %s (%s) is registered with %s, but this request goes to %s, the Hub the CLI selects; select that Hub with --hub or 'scion hub use'\n",
			show.OrDash(r.BrokerName), r.BrokerID, r.HubEndpoint, t.URL)
	}
}

func newBrokerProvideCmd(a *app, provide bool) *cobra.Command {
	var project, name string
	c := &cobra.Command{
		Use:   "provide --project <project>",
		Short: "Authorize this broker to run a project's agents",
		Long: `Make this machine's Runtime Broker a provider of a project, so the Hub may
place the project's agents on it. The broker is the one registered with the
Hub the CLI selects, or the stored connection named by --name.`,
		Example: `  scion runtime-broker provide --project web`,
		Args:    noArgs,
	}
	if !provide {
		c.Use = "withdraw --project <project>"
		c.Short = "Stop this broker from providing for a project"
		c.Long = `Remove this machine's Runtime Broker from a project's providers; the Hub
no longer places the project's new agents on it.`
		c.Example = `  scion runtime-broker withdraw --project web`
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if project == "" {
			return usageErrorf("--project is required")
		}
		t, cl, err := a.connect()
		if err != nil {
			return err
		}
		r, err := brokerForHub(t, name)
		if err != nil {
			return err
		}
		warnOtherHub(cmd, r, t)
		call, verb := cl.ProvideProject, "now provides for"
		if !provide {
			call, verb = cl.WithdrawProject, "no longer provides for"
		}
		b, err := call(cmd.Context(), r.BrokerID, project)
		if err != nil {
			return err
		}
		if a.json() {
			return a.render(cmd.OutOrStdout(), b)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Runtime Broker %s %s project %s.\n", b.Name, verb, project)
		return nil
	}
	c.Flags().StringVar(&project, "project", "", "project name or ID (required)")
	c.Flags().StringVar(&name, "name", "", "stored broker connection to use (default: the one for the selected Hub)")
	return c
}

// brokerStatus is what status prints with -o json: the Hub's record of the
// broker plus the local hub_endpoint.
type brokerStatus struct {
	api.RuntimeBroker
	LocalHubEndpoint string `json:"localHubEndpoint"`
	// AgentHubEndpoint is the Hub address the local broker gives its
	// agents, AgentHubSetting the setting that changes it, and
	// AgentHubWarning why agents cannot reach it, if the broker can tell.
	AgentHubEndpoint string `json:"agentHubEndpoint"`
	AgentHubSetting  string `json:"agentHubSetting"`
	AgentHubWarning  string `json:"agentHubWarning,omitempty"`
	// KubernetesProfiles are the kubeconfig context and namespace of each
	// Kubernetes profile.
	KubernetesProfiles []config.KubernetesTarget `json:"kubernetesProfiles,omitempty"`
	// TransportMode and TransportAudience are the transport auth the
	// CLI's requests to this Hub carry (the connection's, under the
	// environment's override): empty for none.
	TransportMode     string `json:"transportMode,omitempty"`
	TransportAudience string `json:"transportAudience,omitempty"`
	// Connections are every Hub connection stored on this machine: the
	// broker process keeps a channel to each (flat instances' aside).
	Connections []connectionView `json:"connections"`
}

// connectionView is one stored Hub connection, without its secret.
type connectionView struct {
	Name              string `json:"name"`
	HubEndpoint       string `json:"hubEndpoint"`
	BrokerID          string `json:"brokerId"`
	BrokerName        string `json:"brokerName"`
	TransportMode     string `json:"transportMode,omitempty"`
	TransportAudience string `json:"transportAudience,omitempty"`
}

// connectionViews are the regular broker's stored connections.
func connectionViews(creds *config.BrokerCredentials) []connectionView {
	out := []connectionView{}
	for _, c := range creds.Connections {
		if c.Instance == "" {
			out = append(out, connectionView{Name: c.Name, HubEndpoint: c.HubEndpoint, BrokerID: c.BrokerID, BrokerName: c.BrokerName,
				TransportMode: c.TransportMode, TransportAudience: c.TransportAudience})
		}
	}
	return out
}

func connectionsText(cs []connectionView) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s: %s as %s (%s)", c.Name, c.HubEndpoint, c.BrokerName, c.BrokerID)
		if c.TransportMode != "" {
			parts[i] += ", transport " + c.TransportMode + " (audience " + c.TransportAudience + ")"
		}
	}
	return strings.Join(parts, "; ")
}

func newBrokerStatusCmd(a *app) *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:   "status",
		Short: "Show this broker's own state as the Hub sees it",
		Long: `Show this machine's Runtime Broker as the Hub the CLI selects sees it. With
server.broker.instances configured, it lists every flat instance instead: its
key, name, broker ID (or "not registered"), runtime target and state at the
Hub (online, offline, "not registered at the Hub", or "unknown" when the Hub
cannot be asked).`,
		Example: `  scion runtime-broker status
  scion runtime-broker status --name gpu-box -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			settings, err := config.LoadSettings()
			if err != nil {
				return err
			}
			if settings.Server.Broker.Instances.Configured() && name == "" {
				// A process with instances hosts only them.
				return a.showInstances(cmd, settings)
			}
			t, cl, err := a.connect()
			if err != nil {
				return err
			}
			r, err := brokerForHub(t, name)
			if err != nil {
				return err
			}
			warnOtherHub(cmd, r, t)
			b, err := cl.GetBroker(cmd.Context(), r.BrokerID)
			if err != nil {
				return err
			}
			st := brokerStatus{RuntimeBroker: *b, LocalHubEndpoint: settings.Server.Broker.HubEndpoint,
				KubernetesProfiles: kubernetesTargets(b.Profiles, settings.Server.Broker),
				AgentHubEndpoint:   firstNonEmpty(settings.Server.Broker.AgentHubEndpoint, settings.Server.Broker.HubEndpoint),
				AgentHubSetting:    config.AgentHubSetting}
			if st.AgentHubEndpoint != "" {
				st.AgentHubWarning = config.AgentHubWarning(b.Runtime, st.AgentHubEndpoint)
			}
			if t.Transport != nil {
				st.TransportMode, st.TransportAudience = t.Transport.Settings.Mode, t.Transport.Settings.Audience
			}
			if creds, err := config.LoadBrokerCredentials(); err == nil {
				st.Connections = connectionViews(creds)
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), st)
			}
			projects := b.Projects
			if len(projects) > 0 {
				names := projectNames(cmd.Context(), cl)
				projects = make([]string, len(b.Projects))
				for i, id := range b.Projects {
					projects[i] = firstNonEmpty(names[id], id)
				}
			}
			kv := []string{
				"Name", b.Name,
				"ID", b.ID,
				"Status", b.Status,
				"Last seen", show.Ago(b.LastSeen),
				"Running agents", fmt.Sprint(b.RunningAgents),
				"Limit", show.LimitText(b.EffectiveMaxAgents),
				"Auto-provide", show.YesNo(b.AutoProvide),
				"Projects", strings.Join(projects, ", "),
				"Capabilities", strings.Join(b.Capabilities, ", "),
				"Runtime", b.Runtime,
			}
			if len(st.KubernetesProfiles) > 0 {
				kv = append(kv, "Kubernetes profiles", kubernetesTargetsText(st.KubernetesProfiles))
			}
			if st.TransportMode != "" {
				kv = append(kv, "Transport auth", st.TransportMode+" (audience "+st.TransportAudience+")")
			}
			kv = append(kv, "Hub", t.URL,
				// The Hub the local broker process dials, which may differ.
				"server.broker.hub_endpoint", firstNonEmpty(st.LocalHubEndpoint, "(unset)"),
				// The Hub address agents get, and the setting that changes it.
				"Agents reach the Hub at", agentHubText(b.Runtime, settings.Server.Broker.AgentHubEndpoint, st.AgentHubEndpoint),
				config.AgentHubSetting, firstNonEmpty(settings.Server.Broker.AgentHubEndpoint, "(unset: the broker's hub_endpoint)"))
			if len(st.Connections) > 1 {
				kv = append(kv, "Hub connections", connectionsText(st.Connections))
			}
			if st.AgentHubWarning != "" {
				kv = append(kv, "Warning", st.AgentHubWarning)
			}
			return show.KeyValues(cmd.OutOrStdout(), kv...)
		},
	}
	c.Flags().StringVar(&name, "name", "", "stored broker connection to show (default: the one for the selected Hub)")
	return c
}

func newBrokerDeregisterCmd(a *app) *cobra.Command {
	var name string
	var force bool
	c := &cobra.Command{
		Use:   "deregister",
		Short: "Remove this broker's registration from the Hub",
		Long: `Deregister this machine's Runtime Broker. The registration is taken from the
broker's stored connections (choose one with --name when there are several),
or, with none stored, from the global settings (server.broker.broker_id).
The deregistration is sent to the Hub the CLI selects, so select that
registration's Hub first (--hub or 'scion hub use'); a warning names both
when they differ. On success the stored connection (or broker_id) is removed.

The Hub refuses to deregister a broker that still has agents and lists them:
delete them first. With --force it deregisters the broker anyway; its agents
keep their records, answer runtime_broker_missing for anything that needs the
broker, and are removed with 'scion delete --force' (their workloads, if
still running on this machine, are not stopped).`,
		Example: `  scion runtime-broker deregister
  scion runtime-broker deregister --name gpu-box --hub team
  scion runtime-broker deregister --force`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, cl, err := a.connect()
			if err != nil {
				return err
			}
			creds, settings, err := loadBrokerFiles()
			if err != nil {
				return err
			}
			r, err := registrationToDeregister(creds, settings, name)
			if err != nil {
				return err
			}
			warnOtherHub(cmd, r, t)
			deregister := cl.DeregisterBroker
			if force {
				deregister = cl.ForceDeregisterBroker
			}
			if err := deregister(cmd.Context(), r.BrokerID); err != nil {
				return err
			}
			if r.FromSettings {
				settings.Server.Broker.BrokerID = ""
				err = settings.Save()
			} else {
				creds.Remove(r.BrokerID)
				err = creds.Save()
			}
			if err != nil {
				return fmt.Errorf("deregistered %s but could not update the local files: %w", r.BrokerID, err)
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), deregisteredView{BrokerID: r.BrokerID, BrokerName: r.BrokerName, Hub: t.URL, Deregistered: true})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deregistered Runtime Broker %s (%s) from %s.\n", show.OrDash(r.BrokerName), r.BrokerID, t.URL)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "stored broker connection to deregister (needed when there are several)")
	c.Flags().BoolVar(&force, "force", false, "deregister even though agents remain (they are left without a broker)")
	return c
}

// registrationToDeregister follows the spec rule: the stored connections
// (--name when there are several), or, with none stored, the registration
// in the global settings.
func registrationToDeregister(creds *config.BrokerCredentials, s *config.Settings, name string) (*localReg, error) {
	if len(creds.Connections) > 0 {
		c, err := creds.Select(name)
		if err != nil {
			return nil, err
		}
		return fromConn(c), nil
	}
	b := s.Server.Broker
	if b.BrokerID == "" {
		return nil, fmt.Errorf("no Runtime Broker registration found: no connections in %s and no server.broker.broker_id in %s",
			config.BrokerCredentialsPath(), config.SettingsPath())
	}
	if name != "" && !settingsMatch(s, name) {
		return nil, fmt.Errorf("no broker registration named %q: no connections are stored, and the global settings hold broker %s (%s)",
			name, show.OrDash(b.Name), b.BrokerID)
	}
	return fromSettings(s), nil
}

// agentHubText is the Hub address agents get, as status shows it: a
// Docker broker forwards a loopback Hub from the agent network's gateway
// unless the setting names an address.
func agentHubText(runtimeKind, setting, endpoint string) string {
	if endpoint == "" {
		return "(unset)"
	}
	if setting == "" && runtimeKind == "docker" {
		if u, err := url.Parse(endpoint); err == nil {
			ip := net.ParseIP(u.Hostname())
			if u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
				return endpoint + " (through a forwarder on the " + config.DockerAgentNetwork + " network's gateway)"
			}
		}
	}
	return endpoint
}
