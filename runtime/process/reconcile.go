package process

import (
	"errors"

	"github.com/scion-go/scion/runtime"
)

// reconcile settles the processes an earlier Runtime over this state
// directory left behind, before anything else reads the records. A broker
// killed in the middle of a launch leaves a process that carries the
// launch nonce in its environment but whose pid may not be recorded yet;
// one killed in the middle of a Delete leaves processes whose agent has no
// record any more. So, for every live process that carries this
// directory's marker:
//
//   - the agent has no record (deleted, or its directory lost): kill it;
//   - the process belongs to another launch than the one the record names
//     (a leftover of an earlier run): kill it;
//   - it is the wrapper of the recorded launch but the record does not
//     name it (killed between start and save): adopt it, recording its
//     identity as the launch would have;
//   - anything else belongs to the recorded, running launch: leave it.
func (r *Runtime) reconcile() {
	byAgent := map[string][]markedProc{}
	for _, p := range markedProcs(r.dir, "") {
		byAgent[p.agentID] = append(byAgent[p.agentID], p)
	}
	for id, ps := range byAgent {
		r.reconcileAgent(id, ps)
	}
}

func (r *Runtime) reconcileAgent(id string, ps []markedProc) {
	unlock, err := r.lock(id)
	if errors.Is(err, runtime.ErrNotFound) {
		killMarked(ps)
		return
	}
	if err != nil {
		return
	}
	defer unlock()
	rec, err := r.load(id)
	if errors.Is(err, runtime.ErrNotFound) {
		killMarked(ps)
		return
	}
	if err != nil {
		return // an unreadable record: leave it to Delete
	}
	var stale []markedProc
	for _, p := range ps {
		switch {
		case p.launch != rec.Launch:
			stale = append(stale, p)
		case p.leader && rec.Proc != p.id:
			rec.Proc = p.id
			rec.StartedAt = startTime(p.id.StartTicks)
			if err := r.save(id, rec); err != nil {
				stale = append(stale, p) // cannot record it: do not leave it unknown
			}
		}
	}
	killMarked(stale)
}

// killAgentProcs kills every live process that carries the agent's
// marker: what its wrapper's process group kill missed (children that left
// the group, or outlived a wrapper that has exited) and execs.
func (r *Runtime) killAgentProcs(id string) {
	killMarked(markedProcs(r.dir, id))
}
