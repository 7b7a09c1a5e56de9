package fleet

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scion-go/scion/api"
)

// Tier is how the broker reaches a spoke's API server.
type Tier string

const (
	// TierPublic: the kubeconfig alone.
	TierPublic Tier = "public"
	// TierHostAliases: routable but DNS-dark; the broker resolves the API
	// host to the given IP itself, the TLS name unchanged.
	TierHostAliases Tier = "host_aliases"
	// TierProxy: through an HTTP CONNECT proxy, TLS end to end.
	TierProxy Tier = "proxy"
	// TierBastion: through an in-process SSH tunnel (a Dialer).
	TierBastion Tier = "bastion"
)

// Cluster is one [clusters.<name>] block.
type Cluster struct {
	// Name is the table's key.
	Name string `toml:"-"`
	// KubeconfigSecret names the broker-scoped Hub secret that holds the
	// kubeconfig (by name only: the value never appears here).
	KubeconfigSecret string            `toml:"kubeconfig_secret"`
	HostAliases      map[string]string `toml:"host_aliases"`
	ProxyURL         string            `toml:"proxy_url"`
	// Namespace and Queue are the defaults for Jobs on this cluster
	// (a Job may name its own queue); empty means the kubeconfig's
	// namespace and no Kueue queue label.
	Namespace string `toml:"namespace"`
	Queue     string `toml:"queue"`
	// ConnectTimeout and RequestTimeout override the broker's defaults
	// for this cluster ("5s"; zero: Options'): each step of reaching the
	// API server, and each request with its body.
	ConnectTimeout Duration `toml:"connect_timeout"`
	RequestTimeout Duration `toml:"request_timeout"`
	// StatusRetry is how long a Job's status polls may keep failing (the
	// spoke unreachable) before the Job is given up with the typed error
	// ("5m" when zero, spoke/jobs.DefaultRetryFor); a cut shorter than it
	// does not fail the Job.
	StatusRetry Duration `toml:"status_retry"`
	// RunAsUser and RunAsGroup are the user and group of the Jobs' pods
	// (unset: spoke/jobs.DefaultRunAsUser, as agent pods). The pods meet
	// Pod Security "restricted" as they are; run_as_user = 0 runs the
	// image as root, which a namespace enforcing "restricted" refuses:
	// the block's explicit choice, for an image that cannot run without.
	RunAsUser  *int64   `toml:"run_as_user"`
	RunAsGroup *int64   `toml:"run_as_group"`
	Bastion    *Bastion `toml:"bastion"`
}

// MaxID bounds run_as_user and run_as_group (Kubernetes' own bound).
const MaxID = 1<<31 - 1

// Bastion is a [clusters.<name>.bastion] block: the SSH tier.
type Bastion struct {
	// Host is host or host:port (port 22 when absent).
	Host string `toml:"host"`
	User string `toml:"user"`
	// KeySecret names the Hub secret that holds the private key.
	KeySecret string `toml:"key_secret"`
	// KnownHosts is one known_hosts line for Host: the host key is
	// always verified, so it is required.
	KnownHosts string `toml:"known_hosts"`
	// KeepaliveInterval and KeepaliveMax: a keepalive every interval, and
	// the connection declared dead after max unanswered ones (a NAT that
	// dropped it silently); zero takes spoke/tunnel's defaults (15s, 3).
	KeepaliveInterval Duration `toml:"keepalive_interval"`
	KeepaliveMax      int      `toml:"keepalive_max"`
}

// Tier is the cluster's reachability tier, from the fields it sets. A
// bastion block makes it the bastion tier; its host_aliases then name the
// address the bastion opens its channel to (the bastion may not resolve
// the API host either). proxy_url is refused beside a bastion or
// host_aliases (Validate): the proxy resolves names on its own side, and
// a proxied SSH hop is not supported.
func (c *Cluster) Tier() Tier {
	switch {
	case c.Bastion != nil:
		return TierBastion
	case c.ProxyURL != "":
		return TierProxy
	case len(c.HostAliases) > 0:
		return TierHostAliases
	default:
		return TierPublic
	}
}

// The naming rules in words: client-go's own messages ("a lowercase RFC
// 1123 label must consist of ...") read badly after a field name.
const dnsLabelRule = "a DNS label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"

// AmbientName is the cluster name of the broker's own (ambient) cluster,
// which no fleet block may take.
const AmbientName = "ambient"

// Validate checks one block; errors name source (the file), the cluster
// and the field, and quote the bad value with the userinfo of any URL in
// it redacted (api.RedactURLs: a proxy_url's password).
func (c *Cluster) Validate(source string) error {
	return api.RedactError(c.validate(source))
}

func (c *Cluster) validate(source string) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%s: clusters.%s.%s: %s", source, c.Name, field, fmt.Sprintf(format, a...))
	}
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return fmt.Errorf("%s: clusters.%s: the cluster name is not %s", source, c.Name, dnsLabelRule)
	}
	if c.Name == AmbientName {
		// Jobs on the broker's own cluster carry this name (labels, the
		// Hub's ledger, the startup sweep): a spoke of that name would
		// pass for it, and leave the broker's own unswept.
		return fmt.Errorf("%s: clusters.%s: the name %s is the broker's own cluster (Jobs that name no cluster): choose another", source, c.Name, AmbientName)
	}
	switch {
	case c.KubeconfigSecret == "":
		return bad("kubeconfig_secret", "required (the Hub secret that holds the kubeconfig)")
	case !api.ValidSecretName(c.KubeconfigSecret):
		return bad("kubeconfig_secret", "%q is not a secret name (letters, digits and _, not starting with a digit)", c.KubeconfigSecret)
	}
	for _, host := range sortedKeys(c.HostAliases) {
		if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
			return bad("host_aliases", "%q is not a host name: %s", api.RedactURL(host), strings.Join(errs, "; "))
		}
		if net.ParseIP(c.HostAliases[host]) == nil {
			return bad("host_aliases", "%q maps to %q, which is not an IP address", host, api.RedactURL(c.HostAliases[host]))
		}
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("proxy_url", "%q is not an http:// or https:// proxy URL", api.RedactURL(c.ProxyURL))
		}
		if c.Bastion != nil {
			return bad("proxy_url", "cannot be combined with a bastion block (choose one tier)")
		}
		if len(c.HostAliases) > 0 {
			return bad("proxy_url", "cannot be combined with host_aliases (the proxy resolves the API host)")
		}
	}
	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return bad("namespace", "%q is not %s", c.Namespace, dnsLabelRule)
		}
	}
	if err := api.CheckJobQueue(c.Queue); err != nil { // the rule of every Job's queue
		return bad("queue", "%s", api.AsError(err).Message)
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"connect_timeout", c.ConnectTimeout}, {"request_timeout", c.RequestTimeout}, {"status_retry", c.StatusRetry}} {
		if d.v.D < 0 || d.v.D > MaxTimeout || (d.v.D > 0 && d.v.D < MinTimeout) {
			return bad(d.field, "%s is out of range (%s to %s, or 0 for the default)", d.v.D, MinTimeout, MaxTimeout)
		}
	}
	for _, id := range []struct {
		field string
		v     *int64
	}{{"run_as_user", c.RunAsUser}, {"run_as_group", c.RunAsGroup}} {
		if id.v != nil && (*id.v < 0 || *id.v > MaxID) {
			return bad(id.field, "%d is out of range (0 to %d)", *id.v, MaxID)
		}
	}
	if b := c.Bastion; b != nil {
		if err := b.validate(); err != nil {
			return fmt.Errorf("%s: clusters.%s.bastion.%w", source, c.Name, err)
		}
	}
	return nil
}

func (b *Bastion) validate() error {
	if b.Host == "" {
		return fmt.Errorf("host: required")
	}
	host, port, err := net.SplitHostPort(b.Address())
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 ||
		(net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0) {
		return fmt.Errorf("host: %q is not host or host:port", api.RedactURL(b.Host))
	}
	if b.User == "" {
		return fmt.Errorf("user: required")
	}
	if k := b.KeepaliveInterval.D; k < 0 || k > MaxTimeout || (k > 0 && k < MinKeepalive) {
		return fmt.Errorf("keepalive_interval: %s is out of range (%s to %s, or 0 for the default)", k, MinKeepalive, MaxTimeout)
	}
	if b.KeepaliveMax < 0 || b.KeepaliveMax > 100 {
		return fmt.Errorf("keepalive_max: %d is out of range (0 to 100)", b.KeepaliveMax)
	}
	if !api.ValidSecretName(b.KeySecret) {
		return fmt.Errorf("key_secret: %q is not a secret name (required: the Hub secret that holds the SSH key)", b.KeySecret)
	}
	// One line: hosts, key type, base64 key (an optional comment after).
	f := strings.Fields(b.KnownHosts)
	if strings.ContainsAny(strings.TrimSpace(b.KnownHosts), "\n\r") || len(f) < 3 {
		return fmt.Errorf("known_hosts: required, one known_hosts line (hosts key-type base64-key): the bastion's host key is always verified")
	}
	if _, err := base64.StdEncoding.DecodeString(f[2]); err != nil {
		return fmt.Errorf("known_hosts: the key is not base64: %v", err)
	}
	return nil
}

// Address is the bastion's host:port.
func (b *Bastion) Address() string {
	if _, _, err := net.SplitHostPort(b.Host); err == nil {
		return b.Host
	}
	return net.JoinHostPort(b.Host, "22")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
