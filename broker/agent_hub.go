package broker

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// AgentHubSetting is the settings key that sets the Hub address agents
// get (Config.AgentHubEndpoint).
const AgentHubSetting = "server.broker.agent_hub_endpoint"

// AgentHubEndpoint is the Hub address agents get (SCION_HUB_ENDPOINT):
// Config.AgentHubEndpoint when set (the setting, or the Docker runtime's
// forwarder for a loopback Hub), else the address the broker itself dials,
// which is known to reach the Hub. It is fixed for the broker's life, so
// that status and the start-up warning say what every agent gets. (The
// Hub's own listener address, which a create also carries, is not used: a
// Hub listening on 0.0.0.0 or loopback announces an address no agent can
// dial.)
func (b *Broker) AgentHubEndpoint() string {
	return cmp.Or(b.cfg.AgentHubEndpoint, b.cfg.HubEndpoint)
}

// AgentHubWarning says, for a runtime kind and the Hub address its agents
// get, why agents cannot reach the Hub there, or "" when they can as far
// as the broker can tell. Agents of the kubernetes runtime run in pods,
// which do not share the broker's network namespace: a loopback address
// (127.0.0.0/8, ::1, localhost) is the pod itself, and an unspecified one
// (0.0.0.0, ::) is no address at all. The process runtime shares the
// broker's host, and the Docker runtime forwards a loopback Hub, so for
// them only an unusable URL is worth a warning.
func AgentHubWarning(runtimeKind, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Sprintf("agents get the Hub address %q, which is not an http(s) URL; set %s", endpoint, AgentHubSetting)
	}
	if runtimeKind != "kubernetes" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	ip := net.ParseIP(host)
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost") || (ip != nil && ip.IsLoopback()):
		return fmt.Sprintf("agents in Kubernetes pods cannot reach the Hub at %s: it is a loopback address, which in a pod is the pod itself; set %s to an address the cluster's pods can reach", endpoint, AgentHubSetting)
	case ip != nil && ip.IsUnspecified():
		return fmt.Sprintf("agents in Kubernetes pods cannot reach the Hub at %s: it is the unspecified address; set %s to an address the cluster's pods can reach", endpoint, AgentHubSetting)
	}
	return ""
}
