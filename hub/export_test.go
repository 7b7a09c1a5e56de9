package hub

import (
	"context"
	"time"

	"github.com/scion-go/scion/hub/authstore"
)

// SettleAgent exposes settleAgent to the external tests: what the Hub
// does for a cut-off command whose reconnect's inventory passed the agent
// by.
func (s *Server) SettleAgent(ctx context.Context, agentID, brokerID string) error {
	return s.settleAgent(authstore.AsSystem(ctx), agentID, brokerID)
}

// UnsettledMessage is the status a cut-off create leaves.
const UnsettledMessage = unsettledMessage

// SetJobRunTimeout shortens how long a job.run waits for the broker's
// answer.
func (s *Server) SetJobRunTimeout(d time.Duration) { s.jobs.SetRunTimeout(d) }

// SetJobCancelTimeout shortens how long a job.cancel waits for the
// broker's answer before it is queued.
func (s *Server) SetJobCancelTimeout(d time.Duration) { s.jobs.SetCancelTimeout(d) }

// SetPendingJobSweep makes the lost-run sweep run every d, starting now.
func (s *Server) SetPendingJobSweep(d time.Duration) { s.jobs.SetPendingSweep(d) }

// SetUIKeepAlive shortens the live feed's keep-alive (and credential
// check) interval for a test; it returns the restore.
func SetUIKeepAlive(d time.Duration) func() {
	old := uiKeepAlive
	uiKeepAlive = d
	return func() { uiKeepAlive = old }
}
