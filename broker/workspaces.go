package broker

import (
	"context"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/wire"
)

// Workspaces provides agents' workspaces. The default, GitWorkspaces, makes
// them according to the project's sharing mode.
type Workspaces interface {
	// Prepare makes the workspace of a new agent and returns its directory.
	// It is called after the agent directory exists.
	Prepare(ctx context.Context, spec wire.AgentSpec) (dir string, err error)
	// Remove releases the agent's workspace. Removing one that does not
	// exist is not an error.
	Remove(ctx context.Context, agentID string) error
}

// WorkspaceReporter is implemented by Workspaces that know where each
// agent's workspace is and what storage holds them. It is separate from
// Workspaces so that simple implementations (and test doubles) need not
// provide it.
type WorkspaceReporter interface {
	// Workspace returns the agent's record; an unknown agent is
	// agent_not_found.
	Workspace(agentID string) (workspace.Record, error)
	Storage() workspace.Storage
	// PlacementOf is where a workspace this broker made at dir is
	// (workspace.PlacementExport or PlacementLocal).
	PlacementOf(dir string) string
}

// AgentWorkspace returns where the agent's workspace is, if the broker's
// Workspaces keep records.
func (b *Broker) AgentWorkspace(agentID string) (workspace.Record, error) {
	r, ok := b.ws.(WorkspaceReporter)
	if !ok {
		return workspace.Record{}, api.NotFound(api.CodeNotFound, "runtime broker %s does not record workspaces", b.cfg.BrokerID)
	}
	return r.Workspace(agentID)
}

// WorkspaceStorage reports the broker's workspace storage for its hello:
// local unless its Workspaces say otherwise.
func (b *Broker) WorkspaceStorage() workspace.Storage {
	if r, ok := b.ws.(WorkspaceReporter); ok {
		return r.Storage()
	}
	return workspace.Storage{Type: workspace.StorageLocal}
}
