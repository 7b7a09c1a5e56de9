package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// applyAgentStatus records a state change a broker observed on its own
// (an agent exiting, say). Reports for another broker's or an older run's
// agent are stale and ignored.
func (s *Server) applyAgentStatus(ctx context.Context, brokerID string, st wire.AgentStatus) error {
	a, err := s.store.GetAgent(ctx, st.AgentID)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.BrokerID != brokerID || (st.RunID != "" && a.RunID != "" && st.RunID != a.RunID) {
		return nil
	}
	var wasRunning bool
	a, err = s.mutateAgent(ctx, a.ID, func(a *store.Agent) error {
		if !s.observed.claim(a.ID, st.ObservedAt) {
			return errStale
		}
		wasRunning = holdsSlot(a.Phase)
		applyContainerState(a, st)
		return nil
	})
	if errors.Is(err, errStale) {
		return nil
	}
	if err != nil {
		return err
	}
	// Only a change from running to not running frees the slot: a report
	// about an agent that was already stopped must not release the slot a
	// start in flight has just taken.
	if wasRunning && !holdsSlot(a.Phase) {
		return s.store.Release(ctx, a.ID)
	}
	return nil
}

// holdsSlot: phases in which an agent counts against its broker's limit.
func holdsSlot(phase string) bool {
	return phase == api.PhaseRunning || phase == api.PhaseProvisioning || phase == api.PhaseStopping
}

func applyContainerState(a *store.Agent, st wire.AgentStatus) {
	a.ContainerStatus = st.State
	switch st.State {
	case api.ContainerRunning:
		a.Phase = api.PhaseRunning
	case api.ContainerPaused:
		a.Phase = api.PhaseSuspended
	case api.ContainerExited:
		switch a.Phase {
		case api.PhaseStopping: // we asked for it: any exit code is a stop
			a.Phase = api.PhaseStopped
		case api.PhaseRunning, api.PhaseProvisioning:
			a.Phase = api.PhaseStopped
			if st.ExitCode != nil && *st.ExitCode != 0 {
				a.Phase = api.PhaseError
				a.StatusMessage = fmt.Sprintf("agent exited with code %d", *st.ExitCode)
			}
		}
	case api.ContainerMissing:
		if a.Phase == api.PhaseRunning || a.Phase == api.PhaseSuspended || a.Phase == api.PhaseStopping {
			a.Phase = api.PhaseStopped
			a.StatusMessage = "container not found on the runtime broker"
		}
	}
}

// provisioningGrace is how long an agent may sit in provisioning before a
// reconnecting broker with no container for it marks it failed (the Hub
// died between recording the create and the broker's answer).
const provisioningGrace = 30 * time.Second

// reconcileInventory aligns the Hub's agents on a broker with the
// containers the broker reports: phases follow the containers, a
// container that is gone frees its slot, and containers the Hub has no
// record of are flagged in the log, never deleted.
func (s *Server) reconcileInventory(ctx context.Context, brokerID string, inv []wire.AgentStatus) error {
	byID := make(map[string]wire.AgentStatus, len(inv))
	for _, st := range inv {
		byID[st.AgentID] = st
	}
	page := store.Page{Limit: 1000}
	for {
		agents, next, _, err := s.store.ListAgents(ctx, store.AgentFilter{BrokerID: brokerID}, page)
		if err != nil {
			return err
		}
		for _, a := range agents {
			st, ok := byID[a.ID]
			delete(byID, a.ID)
			if !ok {
				if a.Phase == api.PhaseProvisioning && time.Since(a.UpdatedAt) < provisioningGrace {
					continue // a create may still be on its way
				}
				if a.Phase == api.PhaseStopped || a.Phase == api.PhaseCreated || a.Phase == api.PhaseError {
					continue
				}
				st = wire.AgentStatus{AgentID: a.ID, State: api.ContainerMissing}
				if a.Phase == api.PhaseProvisioning {
					a2, err := s.mutateAgent(ctx, a.ID, func(a *store.Agent) error {
						a.Phase, a.ContainerStatus = api.PhaseError, api.ContainerMissing
						a.StatusMessage = "create was interrupted before the runtime broker confirmed it"
						return nil
					})
					if err == nil {
						err = s.store.Release(ctx, a2.ID)
					}
					if err != nil && !isNotFound(err) {
						return err
					}
					continue
				}
			}
			if err := s.applyAgentStatus(ctx, brokerID, st); err != nil {
				return err
			}
			if st.State == api.ContainerRunning {
				// A running container holds a slot even if the Hub lost
				// track (limit 0: re-adopting never fails on quota).
				if err := s.store.Reserve(ctx, brokerID, a.ID, 0); err != nil {
					return err
				}
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	for id := range byID {
		s.log.Warn("runtime broker reports a container the hub has no agent for; leaving it alone", "broker_id", brokerID, "agent_id", id)
	}
	return nil
}
