package hub

import (
	"errors"
	"slices"

	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
)

// Caller is the authenticated identity of a request (see hub/authz).
type Caller = authz.Caller

// Caller kinds, as plain strings for the older call sites.
const (
	CallerUser   = authz.User
	CallerToken  = authz.Token
	CallerAgent  = authz.Agent
	CallerBroker = authz.Broker
)

// Authorization has three layers: the floor of hub/authstore (every store
// call of a request is decided for its caller), the handlers' own
// decisions through httpapi.Authorize (the 403's reason, delegation,
// dispatch), and httpapi.Guard, which refuses a success answer for a
// request whose handler never asked.

// answer turns a plan's error into the one the handler returns: its
// authz refusal (plan.Refusal) answered and logged as httpapi.Refusal
// does.
func (s *Server) answer(c *Caller, err error) error {
	var r *plan.Refusal
	if errors.As(err, &r) {
		return httpapi.Refusal(s.log, c, r.Act, r.Ref, nil)
	}
	return err
}

// brokerRes describes b as seen from projectID ("" = no project at hand).
func brokerRes(b *store.Broker, projects []string, projectID string) authz.BrokerRes {
	return authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide,
		ServesProject: projectID != "" && slices.Contains(projects, projectID)}
}
