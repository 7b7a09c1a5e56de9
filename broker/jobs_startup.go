package broker

import (
	"context"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/spoke/jobs"
	"github.com/scion-go/scion/wire"

	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
)

// startupClusters are the distinct cluster blocks of the broker's fleet
// and its profiles' overrides (a profile block of a file cluster's name is
// another spoke), by the name Jobs label them with, and whether the
// ambient cluster is one. A name two blocks share is swept through the
// file's block and every profile's own: each may be a different spoke.
func (js *jobsState) startupClusters() []*fleet.Cluster {
	seen := map[*fleet.Cluster]bool{}
	var out []*fleet.Cluster
	add := func(f *fleet.Fleet) {
		for _, n := range f.Names() {
			if c := f.Clusters[n]; !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	add(js.base)
	names := make([]string, 0, len(js.profiles))
	for n := range js.profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(js.profiles[n].fleet)
	}
	return out
}

// jobsStartup sweeps every cluster of the fleet (and the ambient one) for
// this broker's leftovers and follows again its Jobs still running there,
// each cluster on its own goroutine, bounded: a slow or unreachable spoke
// delays nothing but its own Jobs. It runs once, after the first hello
// (the secrets come from the Hub).
func (b *Broker) jobsStartup(ctx context.Context) {
	js := b.jobs
	byName := map[string][]*fleet.Cluster{}
	var names []string
	for _, c := range js.startupClusters() {
		if byName[c.Name] == nil {
			names = append(names, c.Name)
		}
		byName[c.Name] = append(byName[c.Name], c)
	}
	if js.cfg.Ambient != nil && byName[connect.AmbientCluster] == nil {
		names = append(names, connect.AmbientCluster)
		byName[connect.AmbientCluster] = []*fleet.Cluster{nil}
	}
	for _, n := range names {
		js.goJob(func() {
			defer close(js.sweptCh(n))
			seen, ok := map[string]bool{}, true
			for _, c := range byName[n] {
				ok = b.sweepCluster(ctx, c, seen) && ok
			}
			if ok {
				b.reportLost(n, seen)
			}
		})
	}
}

// reportLost reports the Jobs a previous run accepted on cluster and never
// created there (its marks, neither swept nor owned: seen): the Hub holds
// them pending, and nothing else would end them. Only after every block of
// that name was swept and listed: a spoke not read leaves its marks for
// the next start.
func (b *Broker) reportLost(cluster string, seen map[string]bool) {
	js := b.jobs
	now := time.Now().UTC()
	for id, mk := range js.lost {
		if mk.Cluster != cluster {
			continue
		}
		if !seen[id] {
			msg := "the runtime broker stopped after accepting the Job and before submitting it: run it again"
			b.jobLog(cluster, id).Warn("startup: a job accepted by the last run was never submitted; reported as error")
			js.outbox.put(cluster, wire.JobUpdate{JobID: id, State: api.JobStateError, Message: msg, FinishedAt: &now,
				Error: &api.JobError{Status: "error", Cluster: cluster, Tier: mk.Tier, Message: msg},
				Where: &wire.JobAccepted{Cluster: cluster, Tier: mk.Tier, Namespace: mk.Namespace, Name: jobs.Name(id)}})
		}
		js.marks.clear(id)
	}
}

// sweepCluster sweeps and resumes one cluster block (nil: ambient),
// adding the IDs of the Jobs it swept or follows to seen; ok says the
// spoke was read whole (swept and listed).
func (b *Broker) sweepCluster(parent context.Context, c *fleet.Cluster, seen map[string]bool) (ok bool) {
	js := b.jobs
	ctx, cancel := context.WithTimeout(parent, js.cfg.StartupTimeout)
	defer cancel()
	name := connect.AmbientCluster
	if c != nil {
		name = c.Name
	}
	log := b.log.With("cluster", name)
	sp, err := b.openSpoke(ctx, c)
	if err != nil {
		log.Warn("startup sweep: spoke not opened; its leftovers stay until the next start", "err", err)
		return false
	}
	deleted, err := js.cfg.Runner.Sweep(ctx, sp.Clients, sp.Namespace, b.cfg.BrokerID, name)
	ok = err == nil
	if c == nil && apierrors.IsForbidden(err) {
		// The runtime's Role (docs/kubernetes.md) has no jobs.batch:
		// Jobs on the broker's own cluster are a grant of their own, and
		// without it there is nothing of this broker's there to sweep.
		log.Info("Jobs on the broker's own cluster need the scion-jobs Role (docs/kubernetes.md); not swept", "namespace", sp.Namespace)
		return false
	}
	if err != nil {
		log.Warn("startup sweep failed", "tier", sp.Tier, "namespace", sp.Namespace, "err", err)
	}
	now := time.Now().UTC()
	for _, d := range deleted {
		log.Info("startup sweep: deleted a suspended leftover job", "namespace", sp.Namespace, "name", d)
		// The Hub still holds it as pending or queued, and no follow
		// will report it again: say how it ended, or its ledger row (and
		// a waiting `scion job run`) would wait forever.
		id, named := strings.CutPrefix(d, jobs.Name(""))
		if !named || id == "" || js.get(id) != nil {
			continue
		}
		seen[id] = true
		msg := "the runtime broker restarted before the Job was admitted; the startup sweep deleted it: run it again"
		js.outbox.put(name, wire.JobUpdate{JobID: id, State: api.JobStateError, Message: msg, FinishedAt: &now,
			Error: &api.JobError{Status: "error", Cluster: name, Tier: string(sp.Tier), Message: msg},
			Where: &wire.JobAccepted{Cluster: name, Tier: string(sp.Tier), Namespace: sp.Namespace, Name: d}})
	}
	owned, err := js.cfg.Runner.Owned(ctx, sp.Clients, sp.Namespace, b.cfg.BrokerID, name)
	if err != nil {
		log.Warn("startup: running jobs not listed; they are not followed", "tier", sp.Tier, "namespace", sp.Namespace, "err", err)
		return false
	}
	for _, s := range owned {
		if s.JobID == "" {
			continue
		}
		seen[s.JobID] = true
		s.Cluster, s.Tier, s.BrokerID = name, string(sp.Tier), b.cfg.BrokerID
		if s.Namespace == "" {
			s.Namespace = sp.Namespace
		}
		rj, fresh := js.add(b.runCtx, s, sp)
		if !fresh {
			continue
		}
		b.jobLog(name, s.JobID).Info("startup: following a running job again", "namespace", s.Namespace)
		if !js.goJob(func() { b.runJob(rj, false) }) {
			js.remove(rj)
		}
	}
	return ok
}
