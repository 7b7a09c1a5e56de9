package jobs

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scion-go/scion/api"
)

// metrics are the Hub's counters the room counts in (Config), and the
// cluster names that may be a label of scion_jobs_total.
type metrics struct {
	// jobs counts delegated Jobs by the cluster they ran on and how they
	// ended (refused, or a terminal state).
	jobs     *prometheus.CounterVec
	queued   prometheus.Counter
	clusters clusterLabels
}

// The cluster label of scion_jobs_total. A run names any DNS label it
// likes as its cluster, so a caller's name is a label value only once a
// broker has accepted a Job on it: otherwise every refused guess would
// be a new series for as long as the Hub runs. Accepted names are
// brokers' words, and still capped.
const (
	maxClusterLabels  = 64
	clusterLabelAsked = "(unknown)" // a name no broker accepted
	clusterLabelOther = "(other)"   // accepted, past the cap
	clusterLabelLocal = "(profile)" // none named: the profile's
)

type clusterLabels struct {
	mu    sync.Mutex
	known map[string]bool
}

// learnCluster records a cluster a broker accepted a Job on.
func (m *metrics) learnCluster(name string) {
	m.clusters.mu.Lock()
	defer m.clusters.mu.Unlock()
	// A fleet's cluster names are DNS labels; anything else from a
	// broker (a bug) is no label (nor, being maybe invalid UTF-8, can it
	// be one: the registry panics on those).
	if api.CheckJobCluster(name) != nil || len(m.clusters.known) >= maxClusterLabels {
		return
	}
	if m.clusters.known == nil {
		m.clusters.known = map[string]bool{}
	}
	m.clusters.known[name] = true
}

// clusterLabel is the label value for cluster name.
func (m *metrics) clusterLabel(name string) string {
	if name == "" {
		return clusterLabelLocal
	}
	m.clusters.mu.Lock()
	defer m.clusters.mu.Unlock()
	switch {
	case m.clusters.known[name]:
		return name
	case len(m.clusters.known) >= maxClusterLabels:
		return clusterLabelOther
	}
	return clusterLabelAsked
}
