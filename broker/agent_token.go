package broker

import (
	"os"
	"path/filepath"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/wire"
)

// writeAgentToken puts the token the Hub sent with a start, restart or
// resume where the scion CLI inside the agent reads it ($HOME/.scion/
// agent-token, api.AgentTokenFile): an existing container keeps the
// environment of its create, whose SCION_AGENT_TOKEN may have expired
// while the agent was stopped. Agents without a broker-local home (the
// Kubernetes runtime keeps its own) are left alone; they renew through
// the CLI. A failure is logged, not fatal: the agent's own token may
// still be valid.
func (b *Broker) writeAgentToken(ref wire.AgentRef) {
	if ref.AgentToken == "" {
		return
	}
	dirs, err := b.layout.findAgentDirs(ref.AgentID)
	if err != nil || len(dirs) != 1 {
		return
	}
	home := filepath.Join(dirs[0], "home")
	if st, err := os.Stat(home); err != nil || !st.IsDir() {
		return
	}
	if err := b.layout.safeDir(home); err != nil {
		b.log.Warn("agent token not written", "agent", ref.AgentID, "err", err)
		return
	}
	if err := config.WriteFileAtomic(filepath.Join(home, filepath.FromSlash(api.AgentTokenFile)), []byte(ref.AgentToken+"\n"), 0o600); err != nil {
		b.log.Warn("agent token not written", "agent", ref.AgentID, "err", err)
	}
}
