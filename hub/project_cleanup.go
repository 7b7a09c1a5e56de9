package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// cleanupProjectConcurrency bounds the project.cleanup calls one project
// delete has in flight.
const cleanupProjectConcurrency = 8

// cleanupProject asks each broker that provided for a deleted project and
// whose runtime keeps project resources (wire.CapProjectCleanup: the
// Kubernetes runtime's project claims) to remove them, and says what was
// removed and what was left. The project is already deleted: nothing here
// can undo or refuse that, so each failure becomes an entry of left.
//
// An offline broker is not queued a cleanup: the dispatch queue holds
// agent stops only (its entries are checked against an agent when they are
// delivered). Its resources are reported as left, with the way to remove
// them by hand.
func (s *Server) cleanupProject(ctx context.Context, projectID string, providers []string) (removed, left []api.ProjectResource) {
	removed, left = []api.ProjectResource{}, []api.ProjectResource{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, cleanupProjectConcurrency)
	for _, id := range providers {
		b, err := s.store.GetBroker(ctx, id)
		if isNotFound(err) {
			continue // deregistered meanwhile: nothing to ask
		}
		if err != nil {
			left = append(left, api.ProjectResource{BrokerID: id, Reason: "the runtime broker's record could not be read; its project resources, if any, were not removed"})
			continue
		}
		if !slices.Contains(b.Capabilities, wire.CapProjectCleanup) {
			continue // its runtime keeps nothing of the project's beyond its agents
		}
		if !s.brokerOnline(b.ID) {
			left = append(left, api.ProjectResource{Broker: b.Name, BrokerID: b.ID, Reason: offlineCleanupReason(b, projectID)})
			continue
		}
		wg.Add(1)
		go func(b *store.Broker) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var res wire.ProjectCleanup
			err := s.dispatch(ctx, b.ID, wire.MethodProjectCleanup, wire.ProjectRef{ProjectID: projectID}, &res, "")
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res.Removed {
				removed = append(removed, api.ProjectResource{Broker: b.Name, BrokerID: b.ID, Resource: r})
			}
			if err != nil {
				s.log.Warn("project cleanup on a runtime broker failed", "broker", b.Name, "broker_id", b.ID, "project_id", projectID, "err", err)
				left = append(left, api.ProjectResource{Broker: b.Name, BrokerID: b.ID,
					Reason: "project cleanup failed: " + strings.TrimSpace(scrubAddresses(api.AsError(err).Message)) + "; " + manualCleanup(projectID)})
			}
		}(b)
	}
	wg.Wait()
	sortResources(removed)
	sortResources(left)
	return removed, left
}

// offlineCleanupReason says why an offline broker's project resources stay.
func offlineCleanupReason(b *store.Broker, projectID string) string {
	return fmt.Sprintf("runtime broker %q is offline, and a project cleanup is not queued for it; %s", b.Name, manualCleanup(projectID))
}

// manualCleanup says how to remove a project's Kubernetes claims by hand.
func manualCleanup(projectID string) string {
	return "remove the project's claims with: kubectl delete pvc -l scion.claim_scope=project,scion.project_id=" + projectID
}

func sortResources(rs []api.ProjectResource) {
	slices.SortFunc(rs, func(a, b api.ProjectResource) int {
		return strings.Compare(a.Broker+"\x00"+a.Resource, b.Broker+"\x00"+b.Resource)
	})
}
