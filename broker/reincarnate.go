package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/wire"
)

// clearForReincarnation readies an agent for its next generation here: its
// container goes (whatever run it holds: the Hub decided the new one), its
// ports are released, and its home is removed so that the create rebuilds
// it from the harness. Its workspace is not touched.
func (b *Broker) clearForReincarnation(ctx context.Context, spec wire.AgentSpec) error {
	if err := b.rt.Delete(ctx, spec.AgentID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return err
	}
	b.ports.Release(spec.AgentID)
	home := filepath.Join(b.layout.AgentDir(spec.ProjectID, spec.AgentID), "home")
	if err := b.layout.SafeDir(filepath.Dir(home)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(home)
}

// keptWorkspace is the agent's recorded workspace when the create keeps
// it (a reincarnation, a create sent again for an agent that ran): its
// directory, still there. Otherwise the create makes a fresh one.
func (b *Broker) keptWorkspace(spec wire.AgentSpec) (string, bool) {
	if !spec.Reincarnate && !spec.KeepWorkspace {
		return "", false
	}
	rec, err := b.AgentWorkspace(spec.AgentID)
	if err != nil || rec.Path == "" || rec.ProjectID != spec.ProjectID {
		return "", false
	}
	if fi, err := os.Stat(rec.Path); err != nil || !fi.IsDir() {
		return "", false
	}
	return rec.Path, true
}
