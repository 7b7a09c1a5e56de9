package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/events"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/web"
)

// The web page (package web renders it) under /ui/. Its views read
// through the API's own handlers with the caller of the session, so a
// page shows exactly what that caller's API calls would: the
// authorization matrix covers its routes as it does the API's.
//
// A browser signs in with a token (or the OIDC device flow, in the
// page's script, which ends in one), kept in an HttpOnly, SameSite=Strict
// cookie scoped to /ui/. The cookie authenticates only the /ui/ reads
// (GET); everything that changes state is the API's, with a bearer
// token, so a cross-site form can neither read nor write with it.

// uiCookie is the session cookie's name.
const uiCookie = "scion_ui"

// uiListLimit is the first page the overview shows of each list.
const uiListLimit = 500

// uiKeepAlive is the events stream's comment line interval: proxies and
// the per-write deadline see traffic, a gone browser is noticed, and the
// caller's credential is checked again (a var for tests).
var uiKeepAlive = 20 * time.Second

// uiRoutes are the page's routes (Routes lists them with the API's).
func (s *Server) uiRoutes() []Route {
	stream, pub := httpapi.Stream, httpapi.Public
	return []Route{
		pub("GET /ui/login", s.handleUILoginPage),
		pub("POST /ui/login", s.handleUILogin),
		pub("POST /ui/logout", s.handleUILogout),
		pub("GET /ui/static/", web.Static("/ui/static/").ServeHTTP),
		stream("GET /ui/{$}", s.handleUIOverview),
		stream("GET /ui/agents/{agent}", s.handleUIAgent),
		stream("GET /ui/agents/{agent}/logs", s.handleAgentLogs),
		stream("GET /ui/events", s.handleUIEvents),
		// The same feed for the API's clients (scion list -w): bearer
		// tokens only, as every API route.
		stream("GET /api/v1/events", s.handleUIEvents),
	}
}

// uiAuth lets a /ui/ read authenticate with the session cookie: its token
// becomes the request's bearer token (one the request already has wins),
// and the Hub's authentication goes on as for the API. A page asked for
// without a session, or with one the Hub refuses, goes to the sign-in
// page; the events and logs streams answer 401.
func (s *Server) uiAuth(page bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.SecurityHeaders(w.Header())
		if r.Header.Get("Authorization") == "" {
			c, err := r.Cookie(uiCookie)
			if err != nil || c.Value == "" {
				if page {
					http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
					return
				}
				httpapi.WriteError(s.log, w, r, api.Unauthorized("sign in at /ui/login"))
				return
			}
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+c.Value)
			if page {
				w = &loginOn401{ResponseWriter: w, r: r}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// loginOn401 turns a refused session (expired, revoked) into the sign-in
// page, with the cookie dropped.
type loginOn401 struct {
	http.ResponseWriter
	r          *http.Request
	redirected bool
}

func (w *loginOn401) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.redirected = true
		clearUICookie(w.ResponseWriter, w.r)
		w.Header().Del("Content-Type")
		http.Redirect(w.ResponseWriter, w.r, "/ui/login?expired=1", http.StatusSeeOther)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *loginOn401) Write(b []byte) (int, error) {
	if w.redirected {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *loginOn401) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) loginData(msg string) web.LoginData {
	d := web.LoginData{Error: msg}
	if s.opts.OIDC != nil {
		d.OIDC, d.Issuer = true, s.opts.OIDC.IssuerURL
	}
	return d
}

func (s *Server) handleUILoginPage(w http.ResponseWriter, r *http.Request) {
	web.SecurityHeaders(w.Header())
	msg := ""
	if r.URL.Query().Get("expired") != "" {
		msg = "Your session ended; sign in again."
	}
	s.renderPage(w, http.StatusOK, "login", s.loginData(msg))
}

// handleUILogin checks the token a sign-in form sent (as any request with
// it would be: the same rate limit of failed authentications) and keeps
// it in the session cookie.
func (s *Server) handleUILogin(w http.ResponseWriter, r *http.Request) {
	web.SecurityHeaders(w.Header())
	if !sameOrigin(r) {
		httpapi.WriteError(s.log, w, r, api.Forbidden("sign-in from another site"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if tok == "" {
		s.renderPage(w, http.StatusBadRequest, "login", s.loginData("Paste an access token to sign in."))
		return
	}
	check := r.Clone(r.Context())
	check.Header.Set("Authorization", "Bearer "+tok)
	rec := &statusOnly{header: http.Header{}}
	if _, ok := s.id.AuthenticateLimited(rec, check); !ok {
		status := rec.status
		if status == 0 || status == http.StatusUnauthorized {
			status = http.StatusUnauthorized
		}
		s.renderPage(w, status, "login", s.loginData("That token was not accepted: it is unknown, revoked or expired."))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: tok, Path: "/ui/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (s *Server) handleUILogout(w http.ResponseWriter, r *http.Request) {
	web.SecurityHeaders(w.Header())
	if !sameOrigin(r) {
		httpapi.WriteError(s.log, w, r, api.Forbidden("sign-out from another site"))
		return
	}
	clearUICookie(w, r)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// sameOrigin refuses a browser's form post from another site (a login
// CSRF would sign the victim in as the attacker): a request with an
// Origin header must name this Hub's host. One without (curl, a test) is
// not a browser's cross-site post.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func clearUICookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode})
}

// statusOnly records what an authentication refusal would have answered.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(code int)        { s.status = code }

// renderPage writes a page; a template error (a bug) is logged and
// answered 500 before anything was sent.
func (s *Server) renderPage(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages.Render(&buf, name, data); err != nil {
		s.log.Error("web page", "page", name, "err", err)
		http.Error(w, "page error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// apiRead runs an API read handler h as c for the page, with query q
// and path values vars, and decodes its answer into out.
func (s *Server) apiRead(r *http.Request, c *Caller, h func(*http.Request, *Caller) (int, any, error), q url.Values, vars map[string]string, out any) error {
	req := r.Clone(r.Context())
	req.URL = &url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	for k, v := range vars {
		req.SetPathValue(k, v)
	}
	_, body, err := h(req, c)
	if err != nil {
		return err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// uiDenied is a section's text for a list the caller may not read.
func uiDenied(err error) string {
	e := api.AsError(err)
	switch e.Status {
	case http.StatusForbidden, http.StatusNotFound:
		return "Not visible to you (" + e.Code + ")."
	}
	return "Could not be read: " + httpapi.PublicError(e).Message
}

// handleUIOverview is the overview: brokers, projects and agents, each
// as its API list answers this caller. The page's status is the agents
// list's, its main content; a list the caller may not read is said so.
func (s *Server) handleUIOverview(w http.ResponseWriter, r *http.Request, c *Caller) {
	d := web.OverviewData{Caller: callerLabel(c), ProjectNames: map[string]string{}}
	limit := uiListLimitQuery
	var agents api.List[api.Agent]
	if err := s.apiRead(r, c, s.handleListAgents, limit, nil, &agents); err != nil {
		d.AgentsErr = uiDenied(err)
		s.renderPage(w, httpapi.PublicError(api.AsError(err)).Status, "overview", d)
		return
	}
	d.Agents, d.More = agents.Items, agents.NextCursor != ""
	var projects api.List[api.Project]
	if err := s.apiRead(r, c, s.handleListProjects, limit, nil, &projects); err != nil {
		d.ProjectsErr = uiDenied(err)
	} else {
		d.Projects = projects.Items
		d.More = d.More || projects.NextCursor != ""
		for _, p := range projects.Items {
			d.ProjectNames[p.ID] = p.Name
		}
	}
	var brokers api.List[api.RuntimeBroker]
	if err := s.apiRead(r, c, s.handleListBrokers, limit, nil, &brokers); err != nil {
		d.BrokersErr = uiDenied(err)
	} else {
		d.Brokers = brokers.Items
		d.More = d.More || brokers.NextCursor != ""
	}
	s.renderPage(w, http.StatusOK, "overview", d)
}

// handleUIAgent is an agent's page: GET /api/v1/agents/{agent} as the
// caller (?project= as the API takes it, for a name), and its logs
// streamed by the page's script.
func (s *Server) handleUIAgent(w http.ResponseWriter, r *http.Request, c *Caller) {
	var a api.Agent
	if err := s.apiRead(r, c, s.handleGetAgent, r.URL.Query(), map[string]string{"agent": r.PathValue("agent")}, &a); err != nil {
		httpapi.WriteError(s.log, w, r, err)
		return
	}
	d := web.AgentData{Caller: callerLabel(c), Agent: a}
	var p api.Project
	if err := s.apiRead(r, c, s.handleGetProject, nil, map[string]string{"project": a.ProjectID}, &p); err == nil {
		d.ProjectName = p.Name
	}
	s.renderPage(w, http.StatusOK, "agent", d)
}

func callerLabel(c *Caller) string {
	if c.Name != "" {
		return c.Name
	}
	return c.Principal()
}

// handleUIEvents is the page's live feed (server-sent events): for every
// change of the Hub's records (events.Bus), the record read again as
// this caller through the API's handler, so the feed shows what the
// caller's GETs would: an agent it may read ("agent", its JSON), an agent
// it was shown that is gone or no longer visible ("agent-gone"), the
// agent, broker and project lists ("agents", "brokers", "projects"), and
// "resync" when it fell behind.
//
// A stream starts with the three lists as the caller reads them (a
// snapshot: what changed between the page's load, or the feed's
// reconnect, and this subscription is not lost). A list the same as the
// one last sent is not sent again. Every uiKeepAlive a comment keeps the
// stream alive and the caller's credential is checked again: a revoked
// token or a changed role ends the stream (the client's reconnect then
// sees what it may see now).
func (s *Server) handleUIEvents(w http.ResponseWriter, r *http.Request, c *Caller) {
	httpapi.MarkChecked(r.Context()) // each record below is read through its own authorized handler
	fl, ok := w.(http.Flusher)
	if !ok {
		httpapi.WriteError(s.log, w, r, errors.New("streaming unsupported"))
		return
	}
	sub := s.bus.Subscribe()
	defer s.bus.Unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f := &uiFeed{s: s, r: r, c: c, shown: map[string]bool{}, last: map[string]string{}}
	f.send = func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !f.send("hello", map[string]string{"caller": callerLabel(c)}) || !f.snapshot() {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(uiKeepAlive)
	defer tick.Stop()
	for {
		var ev events.Event
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !s.stillCaller(r, c) {
				return
			}
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
			continue
		case <-sub.Wake:
			if sub.Lagged() && !f.send("resync", struct{}{}) {
				return
			}
			continue
		case ev = <-sub.C:
		}
		// What piled up meanwhile, once each: a burst of writes (a
		// thousand creates, each taking a slot) costs one read per record
		// and one broker list, not one per write.
		if ev.Kind == events.KindBroker {
			ev.ID = "" // every broker event reads the whole list
		}
		batch := []events.Event{ev}
		seen := map[events.Event]bool{ev: true}
	drain:
		for len(batch) < 1024 {
			select {
			case e := <-sub.C:
				if e.Kind == events.KindBroker {
					e.ID = ""
				}
				if !seen[e] {
					seen[e] = true
					batch = append(batch, e)
				}
			default:
				break drain
			}
		}
		for _, e := range batch {
			if !f.event(ctx, e) {
				return
			}
		}
	}
}

// stillCaller authenticates r's credential again: false when it no
// longer works (revoked, expired) or now stands for a caller with other
// rights than c.
func (s *Server) stillCaller(r *http.Request, c *Caller) bool {
	// On the Hub's own context: the request's carries its caller, under
	// which the credential's own records are not readable.
	check := r.Clone(s.ctx)
	now, ok := s.id.AuthenticateLimited(&statusOnly{header: http.Header{}}, check)
	return ok && now.Kind == c.Kind && now.ID == c.ID && now.Role == c.Role && now.ProjectID == c.ProjectID &&
		strings.Join(now.Scopes, " ") == strings.Join(c.Scopes, " ")
}

// uiFeed is one stream's state: the agents it showed (so a deletion or a
// lost right is said) and the lists it last sent (so an unchanged one is
// not sent again).
type uiFeed struct {
	s     *Server
	r     *http.Request
	c     *Caller
	send  func(string, any) bool
	shown map[string]bool
	last  map[string]string
}

var uiListLimitQuery = url.Values{"limit": {fmt.Sprint(uiListLimit)}}

// snapshot sends the three lists as the caller reads them now.
func (f *uiFeed) snapshot() bool {
	return f.agents() && f.list(events.KindBroker) && f.list(events.KindProject)
}

// agents sends the agent list again; agents shown before and missing
// from it are said gone.
func (f *uiFeed) agents() bool {
	var l api.List[api.Agent]
	if err := f.s.apiRead(f.r, f.c, f.s.handleListAgents, uiListLimitQuery, nil, &l); err != nil {
		return true // not visible to this caller: nothing to show
	}
	now := map[string]bool{}
	for _, a := range l.Items {
		now[a.ID] = true
	}
	if l.NextCursor == "" { // the whole list: what is missing is gone
		for id := range f.shown {
			if !now[id] && !f.send("agent-gone", map[string]string{"id": id}) {
				return false
			}
		}
	}
	f.shown = now
	return f.sendList(events.KindAgent, "agents", l.Items)
}

// list sends the broker or project list, as the caller reads it.
func (f *uiFeed) list(kind string) bool {
	switch kind {
	case events.KindBroker:
		var l api.List[api.RuntimeBroker]
		if err := f.s.apiRead(f.r, f.c, f.s.handleListBrokers, uiListLimitQuery, nil, &l); err != nil {
			return true
		}
		return f.sendList(kind, "brokers", l.Items)
	case events.KindProject:
		var l api.List[api.Project]
		if err := f.s.apiRead(f.r, f.c, f.s.handleListProjects, uiListLimitQuery, nil, &l); err != nil {
			return true
		}
		return f.sendList(kind, "projects", l.Items)
	}
	return true
}

// sendList sends items as event, unless they are what was sent last.
func (f *uiFeed) sendList(kind, event string, items any) bool {
	b, err := json.Marshal(items)
	if err != nil {
		return false
	}
	if f.last[kind] == string(b) {
		return true
	}
	f.last[kind] = string(b)
	return f.send(event, json.RawMessage(b))
}

// event sends what ev changed that the caller may see; false when the
// stream is gone.
func (f *uiFeed) event(ctx context.Context, ev events.Event) bool {
	switch ev.Kind {
	case events.KindAgent:
		if ev.ID == "" { // many at once (a project deleted): the list again
			return f.agents()
		}
		var a api.Agent
		err := errors.New("deleted")
		if !ev.Deleted {
			err = f.s.apiRead(f.r, f.c, f.s.handleGetAgent, nil, map[string]string{"agent": ev.ID}, &a)
		}
		if err != nil {
			if f.shown[ev.ID] {
				delete(f.shown, ev.ID)
				return f.send("agent-gone", map[string]string{"id": ev.ID})
			}
			return true
		}
		f.shown[a.ID] = true
		return f.send("agent", a)
	case events.KindBroker, events.KindProject:
		return f.list(ev.Kind)
	}
	return ctx.Err() == nil
}
