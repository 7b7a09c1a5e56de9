package broker

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/scion-go/scion/broker/workspace"
	"github.com/scion-go/scion/config"
)

// acceptedMarks keeps on disk the Jobs whose job.run this broker answered
// and that it has neither created on their spoke nor reported ended. A
// broker stopped or killed in that window leaves nothing on the spoke for
// the next start to sweep or follow, while the Hub holds the accepted row
// pending: the next start reports those it finds neither swept nor owned
// (jobsStartup). A mark is removed once the create succeeded (the spoke
// then holds the Job: sweep or Owned find it) or a terminal update is
// queued (the outbox keeps that one).
type acceptedMarks struct {
	dir string // "" keeps nothing
	log *slog.Logger
}

type acceptedMark struct {
	Cluster   string `json:"cluster"`
	Tier      string `json:"tier"`
	Namespace string `json:"namespace"`
}

func (m acceptedMarks) file(id string) string {
	if m.dir == "" || workspace.ValidID("job ID", id) != nil {
		return ""
	}
	return filepath.Join(m.dir, id+".json")
}

func (m acceptedMarks) mark(cluster, tier, namespace, id string) {
	f := m.file(id)
	if f == "" {
		return
	}
	b, err := json.Marshal(acceptedMark{Cluster: cluster, Tier: tier, Namespace: namespace})
	if err == nil {
		err = os.MkdirAll(m.dir, 0o700)
	}
	if err == nil {
		err = config.WriteFileAtomic(f, b, 0o600)
	}
	if err != nil {
		m.log.Warn("job accepted: not marked on disk (a restart before its submit would not report it)", "cluster", cluster, "job", id, "err", err)
	}
}

func (m acceptedMarks) clear(id string) {
	if f := m.file(id); f != "" {
		_ = os.Remove(f)
	}
}

// load is the marks a previous run left, by Job ID.
func (m acceptedMarks) load() map[string]acceptedMark {
	out := map[string]acceptedMark{}
	if m.dir == "" {
		return out
	}
	ents, _ := os.ReadDir(m.dir)
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || m.file(id) == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.dir, e.Name()))
		var mk acceptedMark
		if err == nil {
			err = json.Unmarshal(b, &mk)
		}
		if err != nil || mk.Cluster == "" {
			m.log.Warn("job marks: unreadable entry ignored", "file", e.Name(), "err", err)
			continue
		}
		out[id] = mk
	}
	return out
}
