package probe

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	k8srt "github.com/scion-go/scion/runtime/kubernetes"
	"github.com/scion-go/scion/spoke/check"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
	"github.com/scion-go/scion/wire"
)

// Env is what Run reaches the world with; zero fields take the defaults.
type Env struct {
	// Open reaches a spoke (default: PoolOpener of a pool bounded by the
	// timeout, closed when Run returns).
	Open Opener
	// HTTP fetches secrets from the Hub (default: a client bounded by
	// the timeout).
	HTTP *http.Client
}

// Run is `scion check`: the spoke probes of every cluster of the fleet
// (as the profiles see it) and the sandbox probes of every namespace the
// broker's Kubernetes profiles run agents in. An error is a mistake that
// stops the check before any probe (a settings or fleet file that does
// not parse, a --cluster that names nothing); everything a probe finds is
// a result.
//
// Every message, fix and error has the userinfo of its URLs redacted
// (api.RedactURLs): a proxy_url's or kubeconfig's password is never
// printed.
func Run(ctx context.Context, o config.CheckOptions, env Env) (*api.CheckReport, error) {
	r, err := run(ctx, o, env)
	if err != nil {
		return nil, api.RedactError(err)
	}
	for i := range r.Checks {
		c := &r.Checks[i]
		c.Message, c.Fix = api.RedactURLs(c.Message), api.RedactURLs(c.Fix)
	}
	return r, nil
}

func run(ctx context.Context, o config.CheckOptions, env Env) (*api.CheckReport, error) {
	timeout := cmp.Or(o.Timeout, fleet.DefaultConnectTimeout)
	s, err := config.LoadSettings()
	if err != nil {
		return nil, err
	}
	b := s.Server.Broker
	if o.Profile != "" && !slices.ContainsFunc(b.Profiles, func(p config.ProfileSettings) bool { return p.Name == o.Profile }) {
		return nil, usageErrorf("--profile %s: server.broker.profiles has no such profile", o.Profile)
	}
	targets, fleetResults, err := spokesToCheck(s, o)
	if err != nil {
		return nil, err
	}
	if env.Open == nil {
		pool := connect.NewPool(fleet.Options{ConnectTimeout: timeout, RequestTimeout: timeout}, nil)
		defer pool.Close()
		env.Open = PoolOpener(pool)
	}
	if env.HTTP == nil {
		env.HTTP = &http.Client{Timeout: timeout}
	}
	secrets := secretsFor(s, o.KubeconfigFiles, env.HTTP)
	report := &api.CheckReport{Checks: fleetResults}
	for _, t := range targets {
		// A backstop over the tier's own bounds (connect, each request):
		// one cluster never holds the check for long.
		cctx, cancel := context.WithTimeout(ctx, 3*timeout)
		report.Checks = append(report.Checks, Spoke(cctx, env.Open, t.cluster, t.profile, secrets)...)
		cancel()
	}
	if o.Cluster == "" {
		sts, err := sandboxTargets(b, o.Profile)
		if err != nil {
			return nil, err
		}
		for _, t := range sts {
			cctx, cancel := context.WithTimeout(ctx, 3*timeout)
			kc, err := brokerClient(b, t.Context, timeout)
			report.Checks = append(report.Checks, Sandbox(cctx, kc, err, t)...)
			cancel()
		}
	}
	if report.Checks == nil {
		report.Checks = []api.CheckResult{}
	}
	return report, nil
}

type spokeTarget struct {
	profile string
	cluster *fleet.Cluster
}

// spokesToCheck lists the clusters to probe: with --profile, the fleet as
// that profile sees it; else the fleet file's blocks and every profile's
// own blocks. A profile's jobs.cluster that names no cluster is a failed
// fleet probe.
func spokesToCheck(s *config.Settings, o config.CheckOptions) ([]spokeTarget, []api.CheckResult, error) {
	settingsPath := config.SettingsPath()
	f, err := fleet.Load(fleet.Path(settingsPath, o.ClustersPath), o.ClustersPath != "")
	if err != nil {
		return nil, nil, err
	}
	var out []spokeTarget
	var bad []api.CheckResult
	if o.Profile == "" {
		for _, n := range f.Names() {
			out = append(out, spokeTarget{"", f.Clusters[n]})
		}
	}
	for _, p := range s.Server.Broker.Profiles {
		if o.Profile != "" && p.Name != o.Profile {
			continue
		}
		pf, err := f.ForProfile(p, settingsPath)
		if err != nil {
			return nil, nil, err
		}
		if _, err := pf.Target(p); err != nil {
			bad = append(bad, check.Fleet(p.Name, p.Jobs.Cluster, err.Error()))
		}
		for _, n := range pf.Names() {
			_, own := p.Clusters[n]
			if own || o.Profile != "" {
				prof := ""
				if own {
					prof = p.Name
				}
				out = append(out, spokeTarget{prof, pf.Clusters[n]})
			}
		}
	}
	if o.Cluster != "" {
		var names []string
		kept := out[:0]
		for _, t := range out {
			names = append(names, t.cluster.Name)
			if t.cluster.Name == o.Cluster {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			return nil, nil, usageErrorf("--cluster %s: no such cluster in the fleet (clusters: %s)", o.Cluster, strings.Join(names, ", "))
		}
		out, bad = kept, nil
	}
	return out, bad, nil
}

// sandboxTargets are the namespaces the broker's Kubernetes profiles run
// agents in, with the sandbox account of each, and those an agent may
// choose (agent_namespaces, agent_service_accounts): every identity an
// agent's pod can run as.
func sandboxTargets(b config.BrokerSettings, only string) ([]Target, error) {
	k, err := b.Kubernetes()
	if err != nil {
		return nil, err
	}
	defaults, err := k8srt.ParseSettings(k.Defaults)
	if err != nil {
		return nil, fmt.Errorf("server.broker.kubernetes.defaults: %w", err)
	}
	type layer struct {
		profile string
		s       k8srt.Settings
	}
	var layers []layer
	for _, p := range b.Profiles {
		rt := cmp.Or(p.Runtime, b.Runtime)
		if (only != "" && p.Name != only) || !strings.EqualFold(rt, config.RuntimeKubernetes) {
			continue
		}
		ps, err := k8srt.ParseSettings(p.Settings)
		if err != nil {
			return nil, fmt.Errorf("server.broker.profiles %s: %w", p.Name, err)
		}
		layers = append(layers, layer{p.Name, k8srt.Resolve(ps, defaults)})
	}
	if len(b.Profiles) == 0 && strings.EqualFold(b.Runtime, config.RuntimeKubernetes) {
		layers = append(layers, layer{"", k8srt.Resolve(defaults)})
	}
	seen := map[[3]string]bool{}
	var out []Target
	for _, l := range layers {
		name := l.s.Context
		if name == "" {
			name, _ = config.KubeCurrentContext(k.Kubeconfig)
			name = cmp.Or(name, "(in-cluster)")
		}
		base := Target{Context: l.s.Context, Name: name, Profile: l.profile, Settings: l.s}
		nss := append([]string{base.Namespace()}, k.AgentNamespaces...)
		sas := append([]string{base.ServiceAccount()}, k.AgentServiceAccounts...)
		for _, ns := range nss {
			for _, sa := range sas {
				key := [3]string{l.s.Context, ns, sa}
				if seen[key] {
					continue
				}
				seen[key] = true
				t := base
				t.Settings.Namespace, t.Settings.ServiceAccount = ns, sa
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// brokerClient is a client of the broker's own cluster as the runtime
// makes it: server.broker.kubernetes.kubeconfig (else $KUBECONFIG,
// ~/.kube/config, the in-cluster account) at kubeContext.
func brokerClient(b config.BrokerSettings, kubeContext string, timeout time.Duration) (kubernetes.Interface, error) {
	k, err := b.Kubernetes()
	if err != nil {
		return nil, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.Kubeconfig != "" {
		rules.ExplicitPath = k.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the broker's kubeconfig, context %q: %w", kubeContext, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	return kubernetes.NewForConfig(cfg)
}

// secretsFor reads a secret from --kubeconfig-secret-file when it names
// it, else from the Hub with the broker's stored credentials (the secret
// is broker-scoped: only this broker may read it).
func secretsFor(s *config.Settings, files map[string]string, hc *http.Client) Secrets {
	return func(ctx context.Context, name string) (string, error) {
		if path, ok := files[name]; ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("--kubeconfig-secret-file %s: %w", name, err)
			}
			return string(b), nil
		}
		ep := s.Server.Broker.HubEndpoint
		if ep == "" {
			return "", fmt.Errorf("server.broker.hub_endpoint is not set: register the broker, or pass --kubeconfig-secret-file %s=PATH", name)
		}
		creds, err := config.LoadBrokerCredentials()
		if err != nil {
			return "", err
		}
		conn := creds.ForHub(ep)
		if conn == nil {
			return "", fmt.Errorf("no stored broker credentials for %s: run `scion runtime-broker register`, or pass --kubeconfig-secret-file %s=PATH", ep, name)
		}
		return wire.FetchBrokerSecret(ctx, hc, ep, conn.BrokerID, []byte(conn.Secret), name)
	}
}

// usage is a mistake in the command line: scion exits 2 (see cli.Daemons).
type usage struct{ error }

func (usage) Usage() bool { return true }

func usageErrorf(format string, a ...any) error { return usage{fmt.Errorf(format, a...)} }
