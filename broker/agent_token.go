package broker

import (
	"os"
	"path/filepath"

	"github.com/scion-go/scion/api"
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
	if err := writePrivateFile(filepath.Join(home, filepath.FromSlash(api.AgentTokenFile)), []byte(ref.AgentToken+"\n")); err != nil {
		b.log.Warn("agent token not written", "agent", ref.AgentID, "err", err)
	}
}

// writePrivateFile writes data to path (0600, its directory 0700) through
// a temporary file and a rename, so a reader sees the old or the new
// content, never half of one.
func writePrivateFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".agent-token-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
