package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/channel"
	"github.com/scion-go/scion/hub/httpapi"
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
// An offline broker is queued the cleanup (store.DispatchQueue, delivered
// when it reconnects, before any other command; the dispatch's AgentID
// holds the project ID); if even that fails, its resources are reported
// as left, with the way to remove them by hand.
func (s *Server) cleanupProject(ctx context.Context, c *Caller, projectID string, providers []string) (removed, queued, left []api.ProjectResource) {
	removed, queued, left = []api.ProjectResource{}, []api.ProjectResource{}, []api.ProjectResource{}
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
		if ok, d, err := s.queueProjectCleanup(ctx, c, b, projectID); ok {
			if err != nil {
				s.log.Error("queueing a project cleanup for an offline runtime broker", "broker", b.Name, "broker_id", b.ID, "project_id", projectID, "err", err)
				left = append(left, api.ProjectResource{Broker: b.Name, BrokerID: b.ID, Reason: offlineCleanupReason(b, projectID)})
			} else {
				queued = append(queued, api.ProjectResource{Broker: b.Name, BrokerID: b.ID, Dispatch: d.ID,
					Reason: fmt.Sprintf("runtime broker %q is offline; the cleanup is queued and runs when it reconnects", b.Name)})
			}
			continue
		}
		wg.Add(1)
		go func(b *store.Broker) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var res wire.ProjectCleanup
			err := s.disp.Dispatch(ctx, b.ID, wire.MethodProjectCleanup, wire.ProjectRef{ProjectID: projectID}, &res, "")
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res.Removed {
				removed = append(removed, api.ProjectResource{Broker: b.Name, BrokerID: b.ID, Resource: r})
			}
			if err != nil {
				s.log.Warn("project cleanup on a runtime broker failed", "broker", b.Name, "broker_id", b.ID, "project_id", projectID, "err", err)
				left = append(left, api.ProjectResource{Broker: b.Name, BrokerID: b.ID,
					Reason: "project cleanup failed: " + strings.TrimSpace(httpapi.ScrubAddresses(api.AsError(err).Message)) + "; " + manualCleanup(projectID)})
			}
		}(b)
	}
	wg.Wait()
	sortResources(removed)
	sortResources(queued)
	sortResources(left)
	return removed, queued, left
}

// queueProjectCleanup queues a project.cleanup for broker b if it is
// offline; ok is false (and nothing is written) when it is online, so the
// caller dispatches at once. Decided under the broker's queue lock, as a
// queued stop is, so that a drain that has just finished cannot miss it.
func (s *Server) queueProjectCleanup(ctx context.Context, c *Caller, b *store.Broker, projectID string) (ok bool, d *store.Dispatch, err error) {
	mu := s.queueLock.get(b.ID)
	mu.Lock()
	defer mu.Unlock()
	if s.disp.Online(b.ID) {
		return false, nil, nil
	}
	body, err := json.Marshal(wire.ProjectRef{ProjectID: projectID})
	if err != nil {
		return true, nil, err
	}
	d = &store.Dispatch{BrokerID: b.ID, AgentID: projectID, Method: wire.MethodProjectCleanup, Body: body, CreatedBy: c.Principal()}
	// The project is deleted: its cleanup is the Hub's, whoever asked
	// for the delete (no request may queue one: hub/authstore).
	if _, err := s.store.EnqueueDispatch(s.systemCtx(), d, nil); err != nil {
		return true, nil, err
	}
	s.metrics.queued.Inc()
	s.log.Info("project cleanup queued for offline runtime broker", "broker", b.Name, "broker_id", b.ID, "project_id", projectID, "dispatch", d.ID)
	return true, d, nil
}

// deliverQueuedCleanup sends one queued project.cleanup and records its
// outcome. Unlike a stop it names no agent; a cleanup is idempotent (a
// repeat finds nothing left), so a lost answer is simply sent again.
func (s *Server) deliverQueuedCleanup(ctx context.Context, sess *channel.Session, d *store.Dispatch) queuedOutcome {
	log := s.log.With("broker_id", d.BrokerID, "project_id", d.AgentID, "dispatch", d.ID, "method", d.Method)
	for {
		cctx, cancel := context.WithTimeout(ctx, s.opts.DispatchTimeout)
		var res wire.ProjectCleanup
		err := sess.Conn.Call(cctx, d.Method, json.RawMessage(d.Body), &res, wire.WithKey(d.Key))
		cancel()
		switch {
		case err == nil:
			log.Info("queued project cleanup delivered", "removed", res.Removed)
			return s.finishQueued(ctx, d, store.DispatchDelivered, "removed: "+strings.Join(res.Removed, ", "), queuedDone)
		case api.IsCode(err, api.CodeBrokerUnavailable), api.IsCode(err, api.CodeBrokerTimeout):
			n, nerr := s.store.NoteDispatchAttempt(ctx, d.ID, api.AsError(err).Error())
			if nerr != nil {
				log.Error("queued project cleanup: counting an attempt", "err", nerr)
				return queuedRetry
			}
			if n >= maxQueuedAttempts {
				log.Error("queued project cleanup failed: no answer after repeated attempts", "attempts", n, "err", err)
				return s.finishQueued(ctx, d, store.DispatchFailed, api.AsError(err).Error(), queuedDone)
			}
			if sess.Done() || ctx.Err() != nil {
				return queuedChannelGone
			}
		default:
			log.Warn("queued project cleanup failed on the runtime broker", "err", err)
			return s.finishQueued(ctx, d, store.DispatchFailed, api.AsError(err).Error(), queuedDone)
		}
	}
}

// offlineCleanupReason says why an offline broker's project resources stay.
func offlineCleanupReason(b *store.Broker, projectID string) string {
	return fmt.Sprintf("runtime broker %q is offline and the cleanup could not be queued; %s", b.Name, manualCleanup(projectID))
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
