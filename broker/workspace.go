package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// Workspaces provides agents' workspaces. The default gives each agent an
// empty directory of its own; the project sharing modes (worktree, clone,
// shared) slot in here as other implementations.
type Workspaces interface {
	// Prepare makes the workspace of a new agent and returns its directory.
	// It is called after the agent directory exists.
	Prepare(ctx context.Context, spec wire.AgentSpec) (dir string, err error)
	// Remove releases the agent's workspace. Removing one that does not
	// exist is not an error.
	Remove(ctx context.Context, agentID string) error
}

// layout names the broker-local directories:
//
//	<DataDir>/projects/<projectID>/agents/<agentID>/{home,workspace}
//
// Every path it returns is built from IDs that passed validID, so it stays
// under the root.
type layout struct{ root string }

func (l layout) agentDir(projectID, agentID string) string {
	return filepath.Join(l.root, "projects", projectID, "agents", agentID)
}

// findAgentDirs returns the agent's directories in any project. Lifecycle
// commands after create carry only the agent ID, and the broker keeps no
// index of its own that could drift from the disk.
func (l layout) findAgentDirs(agentID string) ([]string, error) {
	if err := validID("agent ID", agentID); err != nil {
		return nil, err
	}
	return filepath.Glob(filepath.Join(l.root, "projects", "*", "agents", globEscape(agentID)))
}

// within reports whether path lies strictly inside the root. It is the last
// guard before anything is removed.
func (l layout) within(path string) bool {
	rel, err := filepath.Rel(l.root, path)
	return err == nil && rel != "." && !filepath.IsAbs(rel) &&
		rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// validID accepts an ID that can be one path element: not empty, not "."
// or "..", no separators or NUL, and of sane length.
func validID(what, id string) error {
	if id == "" {
		return api.BadRequest("%s is required", what)
	}
	if id == "." || id == ".." || len(id) > 200 || strings.ContainsAny(id, "/\\\x00") {
		return api.BadRequest("%s %q is not a valid path element", what, id)
	}
	return nil
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// emptyWorkspaces gives each agent an empty workspace directory inside its
// agent directory, so deleting the agent directory removes it too.
type emptyWorkspaces struct{ layout layout }

func (w emptyWorkspaces) Prepare(_ context.Context, spec wire.AgentSpec) (string, error) {
	dir := filepath.Join(w.layout.agentDir(spec.ProjectID, spec.AgentID), "workspace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return dir, nil
}

func (w emptyWorkspaces) Remove(_ context.Context, agentID string) error {
	dirs, err := w.layout.findAgentDirs(agentID)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.RemoveAll(filepath.Join(d, "workspace")); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}
