package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// AgentHubSetting is the settings key that sets the Hub address a
// broker's agents get (BrokerSettings.AgentHubEndpoint).
const AgentHubSetting = "server.broker.agent_hub_endpoint"

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
