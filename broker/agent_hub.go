package broker

import "cmp"

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
