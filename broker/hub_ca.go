package broker

import (
	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
)

// HubCAPath is where a container agent finds the CA of the Hub's
// certificate (SCION_HUB_CA names it).
const HubCAPath = "/scion/hub-ca.pem"

// giveHubCA hands the broker's CA of the Hub (Config.AgentHubCA) to the
// agent of rs, so that the scion CLI inside it trusts a Hub under a
// private CA: mounted read-only into a container, by its host path to a
// process agent. A runtime with files of its own (Kubernetes) gets
// nothing: its pods trust what their image does.
func (b *Broker) giveHubCA(rs *runtime.Spec) {
	ca := b.cfg.AgentHubCA
	if ca == "" || !hostFileRuntimes[b.rt.Name()] {
		return
	}
	if b.rt.Name() == "process" {
		rs.Env[api.EnvHubCA] = ca
		return
	}
	rs.Mounts = append(rs.Mounts, runtime.Mount{Source: ca, Target: HubCAPath, ReadOnly: true})
	rs.Env[api.EnvHubCA] = HubCAPath
}
