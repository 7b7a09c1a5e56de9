package broker

import (
	"context"
	"os"
	"path/filepath"
	"slices"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// secretEnv names the entries of an agent's environment that are
// secrets: the Hub secrets of its create and its token. A runtime that
// can keep them out of its readable objects does (runtime.Spec.SecretEnv).
func secretEnv(spec wire.AgentSpec) []string {
	names := []string{api.EnvAgentToken}
	if spec.Handoff != "" {
		names = append(names, api.EnvHandoff) // kept out of specs and logs as a secret is
	}
	for k := range spec.Secrets {
		names = append(names, k)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// writeAgentToken puts the token the Hub sent with a start, restart or
// resume where the scion CLI inside the agent reads it ($HOME/.scion/
// agent-token, api.AgentTokenFile): an existing container keeps the
// environment of its create, whose SCION_AGENT_TOKEN may have expired
// while the agent was stopped. A runtime that delivers the token itself
// (runtime.AgentTokenSetter: Kubernetes, whose pods have no broker-local
// home) is handed it instead. A failure is logged, not fatal: the agent's
// own token may still be valid.
func (b *Broker) writeAgentToken(ctx context.Context, ref wire.AgentRef) {
	if ref.AgentToken == "" {
		return
	}
	if s, ok := b.rt.(runtime.AgentTokenSetter); ok {
		if err := s.SetAgentToken(ctx, ref.AgentID, ref.AgentToken); err != nil {
			b.log.Warn("agent token not delivered", "agent", ref.AgentID, "err", err)
		}
		return
	}
	dirs, err := b.layout.FindAgentDirs(ref.AgentID)
	if err != nil || len(dirs) != 1 {
		return
	}
	home := filepath.Join(dirs[0], "home")
	if st, err := os.Stat(home); err != nil || !st.IsDir() {
		return
	}
	if err := b.layout.SafeDir(home); err != nil {
		b.log.Warn("agent token not written", "agent", ref.AgentID, "err", err)
		return
	}
	if err := config.WriteFileAtomic(filepath.Join(home, filepath.FromSlash(api.AgentTokenFile)), []byte(ref.AgentToken+"\n"), 0o600); err != nil {
		b.log.Warn("agent token not written", "agent", ref.AgentID, "err", err)
	}
}
