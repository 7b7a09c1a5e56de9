package portpool

import "slices"

// What the tests read of a pool. The broker never asks (its answers come
// from Allocate, Acquire and their errors), so these live with the tests.

// allocate is Allocate with no ports excepted.
func (p *Pool) allocate(agentID string, n int) ([]int, error) { return p.Allocate(agentID, n, nil) }

// holder is the agent holding port, or "".
func (p *Pool) holder(port int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owner[port]
}

// heldBy returns the ports agentID holds.
func (p *Pool) heldBy(agentID string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.held[agentID])
}

// free is how many ports of the range nobody holds.
func (p *Pool) free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.freeLocked()
}
