package hub

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/store"
)

// stateCollector reads the Hub's state at scrape time (nothing is kept
// between scrapes, so the figures are the database's, whichever Hub
// process wrote them): agents by phase, each broker's running agents,
// limit and commands queued for it.
type stateCollector struct{ s *Server }

var (
	agentsDesc  = prometheus.NewDesc("scion_agents", "Agents by phase.", []string{"phase"}, nil)
	runningDesc = prometheus.NewDesc("scion_broker_running_agents", "Agents holding a slot on a runtime broker.", []string{"broker"}, nil)
	limitDesc   = prometheus.NewDesc("scion_broker_max_agents", "A runtime broker's effective agent limit (0: unlimited).", []string{"broker"}, nil)
	onlineDesc  = prometheus.NewDesc("scion_broker_online", "1 when the runtime broker is online.", []string{"broker"}, nil)
	pendingDesc = prometheus.NewDesc("scion_dispatches_pending", "Commands queued for an offline runtime broker, not yet delivered.", []string{"broker"}, nil)
	scrapeDesc  = prometheus.NewDesc("scion_state_scrape_errors", "1 when the state above could not be read whole at this scrape.", nil, nil)
)

// phases are the phases counted, so that a phase with no agents reads 0
// rather than vanishing.
var phases = []string{api.PhaseCreated, api.PhaseProvisioning, api.PhaseRunning, api.PhaseStopping, api.PhaseStopped,
	api.PhaseSuspended, api.PhaseError, api.PhaseDeleting}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{agentsDesc, runningDesc, limitDesc, onlineDesc, pendingDesc, scrapeDesc} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(authstore.AsSystem(c.s.ctx), 5*time.Second)
	defer cancel()
	failed := 0.0
	for _, ph := range phases {
		_, _, n, err := c.s.store.ListAgents(ctx, store.AgentFilter{Phase: ph}, store.Page{Limit: 1})
		if err != nil {
			failed = 1
			continue
		}
		ch <- prometheus.MustNewConstMetric(agentsDesc, prometheus.GaugeValue, float64(n), ph)
	}
	counts, err := c.s.store.ReservationCounts(ctx)
	if err != nil {
		failed = 1
	}
	page := store.Page{Limit: 1000}
	for {
		bs, next, _, err := c.s.store.ListBrokers(ctx, page)
		if err != nil {
			failed = 1
			break
		}
		for _, b := range bs {
			ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(counts[b.ID]), b.Name)
			if lim, err := c.s.brokerLimit(ctx, b); err == nil {
				ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(lim), b.Name)
			}
			online := 0.0
			if c.s.disp.Online(b.ID) {
				online = 1
			}
			ch <- prometheus.MustNewConstMetric(onlineDesc, prometheus.GaugeValue, online, b.Name)
			if ds, err := c.s.store.PendingDispatches(ctx, b.ID, 1000); err == nil {
				ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(len(ds)), b.Name)
			} else {
				failed = 1
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	ch <- prometheus.MustNewConstMetric(scrapeDesc, prometheus.GaugeValue, failed)
}
