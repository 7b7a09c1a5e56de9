package cli

// Flat Runtime Broker instances (server.broker.instances) seen from the
// CLI: 'runtime-broker register --instance <key>' registers one with the
// selected Hub and saves its own credentials under its key, and
// 'runtime-broker status' lists every instance with its state at the Hub.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/config"
)

// experimentHint is how the flat brokers' experiment is turned on.
var experimentHint = "an admin of the Hub turns it on with 'scion hub settings set --experiment " + api.ExperimentFlatRuntimeBrokers + "=on'"

// instanceRegistration is what register --instance prints with -o json.
type instanceRegistration struct {
	registration
	Instance      string            `json:"instance"`
	RuntimeTarget api.RuntimeTarget `json:"runtimeTarget"`
	// MaxAgents is the entry's maxAgents; MaxAgentsApplied whether the Hub
	// took it, MaxAgentsWarning why not.
	MaxAgents        *int   `json:"maxAgents,omitempty"`
	MaxAgentsApplied bool   `json:"maxAgentsApplied,omitempty"`
	MaxAgentsWarning string `json:"maxAgentsWarning,omitempty"`
	// Activated is false when the Hub refused the instance's target (its
	// experiment off): the broker is registered without it, and its
	// start activates it once the experiment is on; NotActivated says
	// why and how.
	Activated    bool   `json:"activated"`
	NotActivated string `json:"notActivated,omitempty"`
}

// loadInstances reads and validates server.broker.instances: a bad entry
// is an error naming it and its field.
func loadInstances(s *config.Settings) ([]config.Instance, error) {
	ins, err := s.Server.Broker.Instances.Parse()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.SettingsPath(), err)
	}
	return ins, nil
}

func (a *app) registerInstance(cmd *cobra.Command, key string, autoProvide, force bool) error {
	creds, settings, err := loadBrokerFiles()
	if err != nil {
		return err
	}
	ins, err := loadInstances(settings)
	if err != nil {
		return err
	}
	in, err := config.FindInstance(ins, key)
	if err != nil {
		return err
	}
	targets, err := resolveInstanceTargets(settings, ins, key)
	if err != nil {
		return err
	}
	var target api.RuntimeTarget
	for i := range ins {
		if ins[i].Key == key {
			target = targets[i]
		}
	}
	t, cl, err := a.connectBroker()
	if err != nil {
		return err
	}
	if c := creds.ForInstance(t.URL, key); c != nil && !force {
		return fmt.Errorf("instance %s is already registered with %s as %s (%s); deregister it first, or pass --force to replace its stored credentials",
			key, t.URL, c.BrokerName, c.BrokerID)
	}
	req := api.RegisterBrokerRequest{Name: in.Name, AutoProvide: autoProvide, RuntimeTarget: &target}
	if err := validateInput(req.Validate()); err != nil { // the Hub's own check
		return err
	}
	bc, err := cl.RegisterBroker(cmd.Context(), req)
	var notActivated *api.Error
	if ae := (*api.Error)(nil); errors.As(err, &ae) && ae.Code == api.CodeExperimentDisabled {
		// The Hub refuses a first registration as a flat instance while
		// the experiment is off. Registering the broker without its target
		// leaves what 'runtime-broker start' needs (the instance's own
		// credentials, marked with its key and target): its hello declares
		// the target, the Hub refuses that hello the same way until an
		// admin turns the experiment on, and the broker asks again every
		// 15-30 s, so the instance activates then without a restart, as a
		// workstation's does. Until then the record is a broker that never
		// came online: nothing is placed on it.
		notActivated = ae
		bc, err = cl.RegisterBroker(cmd.Context(), api.RegisterBrokerRequest{Name: in.Name, AutoProvide: autoProvide})
	}
	if err != nil {
		var ae *api.Error
		switch {
		case errors.As(err, &ae) && ae.Code == api.CodeAlreadyExists:
			// The Hub's message says to choose another --name, which
			// --instance refuses: the name is the entry's.
			fmt.Fprintf(cmd.ErrOrStderr(), "instance %s registers under its entry's name %q (%s, name), which another Runtime Broker holds on %s: give the entry another name, or deregister that broker\n",
				key, in.Name, "server.broker.instances", t.URL)
		}
		return err
	}
	registered := config.RuntimeTarget(target)
	r, ws, err := storeRegistration(t, creds, settings, bc, key, &registered, a.transport, a.insecureHTTP)
	if err != nil {
		return err
	}
	out := instanceRegistration{registration: r, Instance: key, RuntimeTarget: target, MaxAgents: in.MaxAgents, Activated: notActivated == nil}
	if notActivated != nil {
		out.NotActivated = fmt.Sprintf("%s: %s; 'scion runtime-broker start' serves it as soon as it is on, without a restart",
			notActivated.Code, experimentHint)
		fmt.Fprintf(cmd.ErrOrStderr(), "Instance %s is registered but not activated: flat Runtime Brokers are an experiment that is off on %s (%s).\n",
			key, t.URL, out.NotActivated)
	}
	if in.MaxAgents != nil {
		// The broker is registered and its credentials saved either way:
		// a refused limit is the admin's to set, not a failed register.
		_, err := cl.UpdateBroker(cmd.Context(), bc.BrokerID, api.UpdateBrokerRequest{Settings: &api.BrokerSettings{MaxAgents: in.MaxAgents}})
		if err != nil {
			out.MaxAgentsWarning = fmt.Sprintf("the Hub did not set maxAgents %d on %s: %s; until an admin sets it (scion hub brokers set %s --max-agents %d), the instance inherits the Hub's default limit",
				*in.MaxAgents, bc.Name, hubErrorText(err), bc.BrokerID, *in.MaxAgents)
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", out.MaxAgentsWarning)
		} else {
			out.MaxAgentsApplied = true
		}
	}
	if a.json() {
		return a.render(cmd.OutOrStdout(), out)
	}
	w := cmd.OutOrStdout()
	printRegistration(w, t, settings, ws, r)
	if notActivated != nil {
		fmt.Fprintf(w, "Instance %s will serve %s once the Hub's experiment %s is on.\n", key, target.String(), api.ExperimentFlatRuntimeBrokers)
	} else {
		fmt.Fprintf(w, "Instance %s serves %s.\n", key, target.String())
	}
	if out.MaxAgentsApplied {
		fmt.Fprintf(w, "Limit: %s (maxAgents).\n", show.LimitText(*in.MaxAgents))
	}
	fmt.Fprintf(w, "Next: register the other instances, then 'scion runtime-broker start'.\n")
	return nil
}

// hubErrorText is a Hub error as "code: message", any other as is.
func hubErrorText(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code + ": " + ae.Message
	}
	return err.Error()
}

// resolveInstanceTargets are the instances' targets as they report them.
// The kubeconfig is read only when a Kubernetes entry leaves its context
// to it; when it cannot be read, that is an error if the entry is the
// instance with key strictKey (the one being registered), otherwise the
// context shows as "(current context)": another entry's unknown context
// does not keep an instance from registering, as it does not keep it
// from running.
func resolveInstanceTargets(s *config.Settings, ins []config.Instance, strictKey string) ([]api.RuntimeTarget, error) {
	current := ""
	for _, in := range ins {
		if in.RuntimeTarget.Type != config.TargetKubernetes || in.RuntimeTarget.Context != "" {
			continue
		}
		c, err := currentKubeContext(s)
		if err != nil {
			for _, x := range ins {
				if x.Key == strictKey && x.RuntimeTarget.Type == config.TargetKubernetes && x.RuntimeTarget.Context == "" {
					return nil, fmt.Errorf("instance %s: runtime_target.context is unset, and %v: set runtime_target.context", x.Key, err)
				}
			}
			c = "(current context)"
		}
		current = c
		break
	}
	ts, err := config.ResolveTargets(ins, current)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.SettingsPath(), err)
	}
	out := make([]api.RuntimeTarget, len(ts))
	for i, t := range ts {
		out[i] = api.RuntimeTarget(t)
	}
	return out, nil
}

// currentKubeContext is the current context of the kubeconfig the broker
// uses: server.broker.kubernetes.kubeconfig, else $KUBECONFIG, else
// ~/.kube/config (client-go's loading rules, as the runtime's).
func currentKubeContext(s *config.Settings) (string, error) {
	k, err := s.Server.Broker.Kubernetes()
	if err != nil {
		return "", err
	}
	where := "the kubeconfig ($KUBECONFIG, else ~/.kube/config)"
	if k.Kubeconfig != "" {
		where = "the kubeconfig " + k.Kubeconfig + " (server.broker.kubernetes.kubeconfig)"
	} else if home, err := os.UserHomeDir(); err == nil && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		where = "the kubeconfig " + filepath.Join(home, ".kube", "config")
	}
	current, err := config.KubeCurrentContext(k.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("%s cannot be read: %v", where, err)
	}
	if current == "" {
		return "", fmt.Errorf("%s has no current context", where)
	}
	return current, nil
}

// instanceStatus is one instance as 'runtime-broker status' shows it.
type instanceStatus struct {
	Key           string            `json:"key"`
	Name          string            `json:"name"`
	BrokerID      string            `json:"brokerId,omitempty"`
	Registered    bool              `json:"registered"`
	RuntimeTarget api.RuntimeTarget `json:"runtimeTarget"`
	Target        string            `json:"target"`
	// State is the Hub's status of the broker (online, offline, ...),
	// "not registered" without local credentials, "not registered at
	// the Hub" when the Hub does not know the broker ID, and "unknown"
	// when the Hub could not be asked (StateError says why).
	State      string `json:"state"`
	StateError string `json:"stateError,omitempty"`
	MaxAgents  *int   `json:"maxAgents,omitempty"`
}

// Instance states besides the Hub's broker statuses.
const (
	stateNotRegistered      = "not registered"
	stateNotRegisteredAtHub = "not registered at the Hub"
	stateUnknown            = "unknown"
)

// instancesStatus is status's -o json with instances configured.
type instancesStatus struct {
	HubEndpoint      string           `json:"hubEndpoint"`
	LocalHubEndpoint string           `json:"localHubEndpoint"`
	Instances        []instanceStatus `json:"instances"`
}

// showInstances is status with server.broker.instances configured: every
// instance, its target and its state at the Hub the CLI selects (else
// server.broker.hub_endpoint's, whose credentials are then shown).
func (a *app) showInstances(cmd *cobra.Command, s *config.Settings) error {
	ins, err := loadInstances(s)
	if err != nil {
		return err
	}
	targets, err := resolveInstanceTargets(s, ins, "")
	if err != nil {
		return err
	}
	creds, err := config.LoadBrokerCredentials()
	if err != nil {
		return err
	}
	endpoint := s.Server.Broker.HubEndpoint
	t, cl, cerr := a.connect()
	if cerr == nil {
		endpoint = t.URL
	}
	out := instancesStatus{HubEndpoint: endpoint, LocalHubEndpoint: s.Server.Broker.HubEndpoint, Instances: []instanceStatus{}}
	for i, in := range ins {
		st := instanceStatus{Key: in.Key, Name: in.Name, RuntimeTarget: targets[i], Target: targets[i].String(), MaxAgents: in.MaxAgents}
		conn := creds.ForInstance(endpoint, in.Key)
		if conn == nil && endpoint == "" {
			// No Hub known at all: credentials stored for any Hub still
			// mean the instance is registered, not that it is not.
			conn = instanceConnection(creds, in.Key)
		}
		switch {
		case conn == nil:
			st.State = stateNotRegistered
		case cerr != nil:
			st.BrokerID, st.Registered, st.State, st.StateError = conn.BrokerID, true, stateUnknown, cerr.Error()
			if endpoint == "" {
				st.StateError += "; its credentials are registered with " + conn.HubEndpoint
			}
		default:
			st.BrokerID, st.Registered = conn.BrokerID, true
			b, err := cl.GetBroker(cmd.Context(), conn.BrokerID)
			var ae *api.Error
			switch {
			case err == nil:
				st.State = b.Status
			case errors.As(err, &ae) && ae.Code == api.CodeBrokerNotFound:
				st.State = stateNotRegisteredAtHub
			default:
				st.State, st.StateError = stateUnknown, hubErrorText(err)
			}
		}
		out.Instances = append(out.Instances, st)
	}
	if a.json() {
		return a.render(cmd.OutOrStdout(), out)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Flat Runtime Broker instances (server.broker.instances), as %s sees them:\n", firstNonEmpty(endpoint, "(no Hub selected)"))
	tb := show.NewTable(w, "KEY", "NAME", "BROKER ID", "TARGET", "STATE")
	for _, st := range out.Instances {
		tb.Row(st.Key, st.Name, firstNonEmpty(st.BrokerID, stateNotRegistered), st.Target, st.State)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	for _, st := range out.Instances {
		if st.StateError != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: instance %s: the Hub could not be asked: %s\n", st.Key, st.StateError)
		}
	}
	return nil
}

// instanceConnection is the first stored connection of the instance with
// key, whatever its Hub, or nil.
func instanceConnection(creds *config.BrokerCredentials, key string) *config.BrokerConnection {
	for _, c := range creds.Connections {
		if c.Instance == key {
			return c
		}
	}
	return nil
}
