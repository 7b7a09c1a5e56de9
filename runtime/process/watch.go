package process

import (
	"context"
	"time"
)

// watchInterval is how often adopted agents are checked for having exited.
// Agents this Runtime started are waited for and reported at once; adopted
// ones are not its children, and polling /proc is the portable way to
// notice their end.
const watchInterval = 250 * time.Millisecond

// adopt starts watching the live agents an earlier Runtime left behind.
func (r *Runtime) adopt() error {
	recs, err := r.records(context.Background())
	if err != nil {
		return err
	}
	for _, ar := range recs {
		if ar.err != nil {
			continue
		}
		if alive, _ := probe(ar.rec.Proc); alive {
			r.watched[ar.id] = ar.rec.Proc
		}
	}
	if len(r.watched) > 0 {
		r.wg.Add(1)
		go r.watch()
	}
	return nil
}

// watch reports the exits of adopted agents until none is left or the
// runtime closes.
func (r *Runtime) watch() {
	defer r.wg.Done()
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		var exited []string
		for id, p := range r.watched {
			if alive, _ := probe(p); !alive {
				exited = append(exited, id)
			}
		}
		watched := make(map[string]procID, len(exited))
		for _, id := range exited {
			watched[id] = r.watched[id]
			delete(r.watched, id)
		}
		left := len(r.watched)
		r.mu.Unlock()

		for id, p := range watched {
			r.reportExit(id, p)
		}
		if left == 0 {
			return
		}
	}
}

// reportExit emits the exit of an adopted agent, unless it was deleted or
// started again meanwhile. The lock makes it wait for a Stop that killed
// the agent to record the exit status first.
func (r *Runtime) reportExit(id string, p procID) {
	unlock, err := r.lock(id)
	if err != nil {
		return
	}
	defer unlock()
	rec, err := r.load(id)
	if err != nil || rec.Proc != p {
		return
	}
	r.emit(r.status(id, rec))
}
