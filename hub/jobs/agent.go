package jobs

import (
	"context"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
)

// msgAgentDeleted is the message of a Job cancelled because its agent was
// deleted.
const msgAgentDeleted = "cancelled: its agent was deleted"

// CancelJobsOf ends the live Jobs of a deleted agent: nobody is left to
// read their results, and a GPU Job would otherwise hold its spoke until
// its deadline (up to api.MaxJobDeadline). Each row is ended in the ledger
// first, then its broker is asked to delete the Job on its spoke
// (cancelOrphanJob); a broker offline now that reports the Job alive later
// gets the same cancel from ApplyUpdate. It runs in the background: the
// agent's delete has already answered.
func (s *Service) CancelJobsOf(agentID string) {
	s.hub.Go(func() {
		ctx, cancel := context.WithTimeout(s.systemCtx(), time.Minute)
		defer cancel()
		log := s.log.With("agent_id", agentID)
		var cursor string
		for {
			items, next, _, err := s.store.ListJobs(ctx, store.JobFilter{AgentID: agentID}, store.Page{Cursor: cursor, Limit: 200})
			if err != nil {
				log.Warn("listing a deleted agent's jobs to cancel them", "err", err)
				return
			}
			for _, j := range items {
				if j.State.Terminal() {
					continue
				}
				was := j.State
				_, err := s.store.UpdateJobWith(ctx, j.ID, func(x *store.Job) error {
					if x.State.Terminal() {
						return errJobUnchanged
					}
					now := time.Now().UTC()
					x.State, x.Message, x.FinishedAt = api.JobStateCancelled, msgAgentDeleted, &now
					return nil
				})
				if err != nil {
					continue // ended meanwhile, or gone
				}
				s.metrics.jobs.WithLabelValues(s.metrics.clusterLabel(j.Cluster), string(api.JobStateCancelled)).Inc()
				log.Info("job cancelled with its agent", "job", j.ID, "cluster", cmpCluster(j.Cluster))
				if j.BrokerID == "" {
					continue
				}
				// An offline broker gets the cancel when it reconnects:
				// its Job must not run on to its deadline.
				queued, err := s.queueOrphanCancel(ctx, "hub:agent-deleted:"+agentID, j.ID, j.BrokerID)
				switch {
				case err != nil && !isNotFound(err):
					log.Warn("queueing the cancel of a deleted agent's job", "job", j.ID, "err", err)
				case !queued && err == nil:
					s.cancelOrphanJob(j.ID, j.BrokerID, was)
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	})
}
