package httpapi

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authz"
)

// checkMark records that a request's handler asked for an authorization
// decision. Guard refuses to send a success answer for a request that
// never did: a route without an authorization check fails loudly (500)
// instead of serving everyone. Under both is the floor of hub/authstore:
// every store call of the request is decided for its caller, so what a
// handler forgot to ask about it still cannot read or change; Authorize
// stays for the answers only a handler can give (the 403's reason,
// delegation, dispatch).
type checkMark struct{ checked atomic.Bool }

type checkKey struct{}

// MarkChecked records that the request of ctx got its authorization
// decision (a handler whose every path ends in one, or in a not-found
// that tells nothing, says so).
func MarkChecked(ctx context.Context) {
	if m, ok := ctx.Value(checkKey{}).(*checkMark); ok {
		m.checked.Store(true)
	}
}

// Authorize asks authz.Can whether c may do a on res. A refusal becomes
// 403 with the reason, or, for what the caller may not even see, the
// error notFound builds (the same answer as for an unknown resource).
func Authorize(ctx context.Context, log *slog.Logger, c *authz.Caller, a authz.Action, res authz.Resource, notFound func() error) error {
	MarkChecked(ctx)
	return Refusal(log, c, a, authz.Can(*c, a, res), notFound)
}

// Refusal turns an authz refusal into the API's answer and logs it
// (caller and action, never a credential).
func Refusal(log *slog.Logger, c *authz.Caller, a authz.Action, ref *authz.Refusal, notFound func() error) error {
	if ref == nil {
		return nil
	}
	log.Info("request refused", "caller", c.Principal(), "kind", c.Kind, "action", a, "reason", ref.Reason)
	if ref.Hidden && notFound != nil {
		return notFound()
	}
	return api.Forbidden("%s", ref.Reason)
}

// The not-found answers quote the caller's reference cut short
// (api.Quote): a path segment may be tens of kilobytes.

// BrokerNotFound answers a broker reference that is unknown or hidden.
func BrokerNotFound(ref string) func() error {
	return func() error {
		return api.NotFound(api.CodeBrokerNotFound, "runtime broker %s not found", api.Quote(ref))
	}
}

// ProjectNotFound answers a project reference that is unknown or hidden.
func ProjectNotFound(ref string) func() error {
	return func() error { return api.NotFound(api.CodeProjectNotFound, "project %s not found", api.Quote(ref)) }
}

// AgentNotFound answers an agent reference that is unknown or hidden.
func AgentNotFound(ref string) func() error {
	return func() error { return api.NotFound(api.CodeAgentNotFound, "agent %s not found", api.Quote(ref)) }
}

// Guard returns w and r for an authenticated request's handler: r's
// context carries the request's mark, and w refuses a success answer
// (2xx/3xx, or a hijack for a WebSocket) while the mark is unset.
func Guard(log *slog.Logger, w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	mark := &checkMark{}
	r = r.WithContext(context.WithValue(r.Context(), checkKey{}, mark))
	return &guardWriter{ResponseWriter: w, log: log, r: r, mark: mark}, r
}

type guardWriter struct {
	http.ResponseWriter
	log     *slog.Logger
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
		g.log.Error("route answered without an authorization check", "route", g.r.Pattern)
		e := api.Internal("this route has no authorization check")
		WriteJSON(g.ResponseWriter, e.Status, api.ErrorBody{Error: e})
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
