package broker

import (
	"context"
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// cleanupMoved is agent.cleanup: the Hub moved the agent to another broker
// and this one removes its local copy (multi-broker spec, "What happens
// during a move"). Only the container of the run the Hub names goes: a
// runtime whose agents are found by agent ID alone (a Kubernetes
// namespace both brokers share) may answer with the agent's new pod, of
// another run, which is left alone. Then the broker-local agent directory
// with its home (and a local workspace inside it). Nothing on the export
// is touched: a shared checkout or a per-agent workspace there is the
// agent's on the target now.
func (b *Broker) cleanupMoved(ctx context.Context, ref wire.AgentRef) (runtime.Status, error) {
	if ref.RunID == "" {
		return runtime.Status{}, api.BadRequest("agent.cleanup of agent %s names no run: the broker removes only the run it is told", ref.AgentID)
	}
	st, err := b.rt.Inspect(ctx, ref.AgentID)
	switch {
	case err == nil && st.RunID == ref.RunID:
		if err := b.rt.Delete(ctx, ref.AgentID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return runtime.Status{}, err
		}
	case err == nil:
		b.log.Warn("cleanup of a moved agent: the runtime holds another run of it, left alone",
			"agent", ref.AgentID, "run", ref.RunID, "found_run", st.RunID)
	case !errors.Is(err, runtime.ErrNotFound):
		return runtime.Status{}, err
	}
	b.placements.Delete(ref.AgentID)
	b.ports.Release(ref.AgentID)
	dirs, err := b.layout.FindAgentDirs(ref.AgentID)
	if err != nil {
		return runtime.Status{}, err
	}
	// Not the Workspaces' Remove: that is a delete's, which also removes
	// a per-agent workspace on the export, now the agent's on the target.
	// Its local directory is all this broker has of it.
	for _, d := range dirs {
		b.removeDir(d)
	}
	return runtime.Status{AgentID: ref.AgentID, RunID: ref.RunID, State: runtime.StateMissing}, nil
}
