package hub

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
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

// checkMark records that a request's handler asked for an authorization
// decision. The guard in requireAuth refuses to send a success answer for
// a request that never did: a route without an authorization check fails
// loudly (500) instead of serving everyone. Under both is the floor of
// hub/authstore: every store call of the request is decided for its
// caller, so what a handler forgot to ask about it still cannot read or
// change; authorize stays for the answers only a handler can give (the
// 403's reason, delegation, dispatch).
type checkMark struct{ checked atomic.Bool }

type checkKey struct{}

func markChecked(ctx context.Context) {
	if m, ok := ctx.Value(checkKey{}).(*checkMark); ok {
		m.checked.Store(true)
	}
}

// authorize asks authz.Can whether c may do a on res. A refusal becomes
// 403 with the reason, or, for what the caller may not even see, the
// error notFound builds (the same answer as for an unknown resource).
func (s *Server) authorize(ctx context.Context, c *Caller, a authz.Action, res authz.Resource, notFound func() error) error {
	markChecked(ctx)
	return s.refusal(c, a, authz.Can(*c, a, res), notFound)
}

// refusal turns an authz refusal into the API's answer and logs it
// (caller and action, never a credential).
func (s *Server) refusal(c *Caller, a authz.Action, ref *authz.Refusal, notFound func() error) error {
	if ref == nil {
		return nil
	}
	s.log.Info("request refused", "caller", c.Principal(), "kind", c.Kind, "action", a, "reason", ref.Reason)
	if ref.Hidden && notFound != nil {
		return notFound()
	}
	return api.Forbidden("%s", ref.Reason)
}

// answer turns a plan's error into the one the handler returns: its
// authz refusal (plan.Refusal) answered and logged as refusal does.
func (s *Server) answer(c *Caller, err error) error {
	var r *plan.Refusal
	if errors.As(err, &r) {
		return s.refusal(c, r.Act, r.Ref, nil)
	}
	return err
}

// brokerRes describes b as seen from projectID ("" = no project at hand).
func brokerRes(b *store.Broker, projects []string, projectID string) authz.BrokerRes {
	return authz.BrokerRes{ID: b.ID, Owner: b.CreatedBy, AutoProvide: b.AutoProvide,
		ServesProject: projectID != "" && slices.Contains(projects, projectID)}
}

// The not-found answers quote the caller's reference cut short
// (api.Quote): a path segment may be tens of kilobytes.
func brokerNotFound(ref string) func() error {
	return func() error {
		return api.NotFound(api.CodeBrokerNotFound, "runtime broker %s not found", api.Quote(ref))
	}
}

func projectNotFound(ref string) func() error {
	return func() error { return api.NotFound(api.CodeProjectNotFound, "project %s not found", api.Quote(ref)) }
}

func agentNotFound(ref string) func() error {
	return func() error { return api.NotFound(api.CodeAgentNotFound, "agent %s not found", api.Quote(ref)) }
}

// guardWriter refuses a success answer (2xx/3xx, or a hijack for a
// WebSocket) for a request whose handler never called authorize.
type guardWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	mark    *checkMark
	wrote   bool
	refused bool
}

func (g *guardWriter) unchecked() bool { return !g.mark.checked.Load() }

func (g *guardWriter) WriteHeader(code int) {
	if g.wrote {
		return
	}
	g.wrote = true
	if code < 400 && g.unchecked() {
		g.s.log.Error("route answered without an authorization check", "route", g.r.Pattern)
		e := api.Internal("this route has no authorization check")
		writeJSON(g.ResponseWriter, e.Status, api.ErrorBody{Error: e})
		g.refused = true // the handler's own body is dropped
		return
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *guardWriter) Write(b []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.refused {
		return len(b), nil
	}
	return g.ResponseWriter.Write(b)
}

func (g *guardWriter) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok && !g.refused {
		f.Flush()
	}
}

func (g *guardWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if g.unchecked() {
		g.WriteHeader(http.StatusOK) // answers 500
		return nil, nil, http.ErrNotSupported
	}
	return http.NewResponseController(g.ResponseWriter).Hijack()
}

func (g *guardWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }
