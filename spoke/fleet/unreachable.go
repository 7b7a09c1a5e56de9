package fleet

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// UnreachableError is a spoke that did not answer: the typed error the
// asking agent sees as {"status":"error","cluster":...,"tier":...,
// "message":...}, naming the spoke and its tier, so that a far path's
// failure is never taken for a local one and never waits forever.
type UnreachableError struct {
	Cluster string
	Tier    Tier
	Message string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("spoke %s (%s tier) unreachable: %s", e.Cluster, e.Tier, e.Message)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// MarshalJSON is the agent-facing shape.
func (e *UnreachableError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Status  string `json:"status"`
		Cluster string `json:"cluster"`
		Tier    Tier   `json:"tier"`
		Message string `json:"message"`
	}{"error", e.Cluster, e.Tier, e.Message})
}

// unreachableRT turns every transport failure (dial, proxy, tunnel, TLS)
// into an UnreachableError; answers, whatever their status, pass.
type unreachableRT struct {
	next    http.RoundTripper
	cluster string
	tier    Tier
}

func (u *unreachableRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := u.next.RoundTrip(r)
	if err != nil {
		return nil, &UnreachableError{Cluster: u.cluster, Tier: u.tier, Message: err.Error(), Err: err}
	}
	return resp, nil
}
