package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/scion-go/scion/wire"
)

// Workspace storage backends, by the names of the spec's
// server.workspace_storage setting.
const (
	StorageLocal = "local"
	StorageNFS   = "nfs"
)

// WorkspaceStorage is what holds a broker's workspaces, as it reports it to
// the Hub (in its hello, once the wire carries it). Only local exists now;
// the nfs fields, named as in the spec (nfs.shares[0]), are what the Hub
// compares to decide whether two brokers see the same export for a move.
type Storage = wire.WorkspaceStorage

// WorkspaceRecord says where an agent's workspace is. It is kept as
// workspace.json in the agent directory, written before the workspace is
// made, so that a crash mid-create still leaves enough to clean up.
type Record struct {
	AgentID   string `json:"agentId"`
	ProjectID string `json:"projectId"`
	Mode      string `json:"mode"` // the project's sharing mode
	Path      string `json:"path"` // the workspace directory on the broker
	Storage   string `json:"storage"`
	// Branch is the worktree's own branch (worktree-per-agent).
	Branch string `json:"branch,omitempty"`
	// BaseCommit is the commit the worktree started from; a branch that
	// has nothing beyond it is deleted with the agent.
	BaseCommit string `json:"baseCommit,omitempty"`
	// GitCommonDir is the base clone's git directory, which a worktree's
	// .git file points at by absolute path: a runtime that isolates the
	// agent must mount it at the same path for git to work inside.
	GitCommonDir string    `json:"gitCommonDir,omitempty"`
	CloneDepth   int       `json:"cloneDepth,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

const recordFile = "workspace.json"

// writeRecord writes the record of a workspace being made. Both callers
// write it once, into an agent directory that has none (a create clears
// an earlier one first), so it is created in place rather than through a
// temporary file and a rename: one directory operation instead of three
// on every create. A crash mid-write leaves a torn record in a workspace
// whose create never completed; the next create or delete of the agent
// finds it unreadable, logs that, and removes the workspace by its layout.
// Should a record be there after all, it is replaced atomically.
func writeRecord(agentDir string, rec Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		b = append(b, '\n')
		path := filepath.Join(agentDir, recordFile)
		if err = writeNewFile(path, b); errors.Is(err, fs.ErrExist) {
			err = writeFileAtomic(path, b)
		}
	}
	if err != nil {
		return fmt.Errorf("workspace record: %w", err)
	}
	return nil
}

// writeNewFile creates path, which must not exist, with data.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
	}
	return werr
}

// readRecord reads the agent's record; ok is false when there is none.
func readRecord(agentDir string) (rec Record, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(agentDir, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("workspace record of %s: %w", agentDir, err)
	}
	return rec, true, nil
}
