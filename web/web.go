// Package web is the Hub's web page: server-rendered HTML (html/template,
// so every value is escaped) and one small script that keeps the page
// live from the Hub's server-sent events and streams an agent's logs.
// No build step: the files are embedded as they are.
//
// It renders what the Hub gives it and decides nothing: the Hub reads
// every view through the same handlers, with the same caller, as the API
// (hub/ui.go). Of ours it imports only api (internal/deptest holds the
// rule).
package web

import (
	"embed"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Pages are the page templates, parsed once.
type Pages struct{ t *template.Template }

// New parses the templates (a broken template is a build-time bug: it
// panics at the Hub's start, which every test catches).
func New() *Pages {
	t := template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html"))
	return &Pages{t: t}
}

// Render writes page name with data.
func (p *Pages) Render(w io.Writer, name string, data any) error {
	return p.t.ExecuteTemplate(w, name, data)
}

// Static serves the script and the style sheet under prefix.
func Static(prefix string) http.Handler {
	sub, _ := fs.Sub(staticFiles, "static")
	fsrv := http.StripPrefix(prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no directory listings
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// SecurityHeaders are every page's: the page runs only its own script,
// talks only to its Hub, and is never framed.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with a form post, which the sign-in refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// LoginData is the sign-in page's.
type LoginData struct {
	Error string
	// OIDC: the Hub signs users in with its OIDC provider (Issuer).
	OIDC   bool
	Issuer string
}

// OverviewData is the overview's: each list, or why the caller may not
// see it.
type OverviewData struct {
	Caller       string
	Brokers      []api.RuntimeBroker
	BrokersErr   string
	Projects     []api.Project
	ProjectsErr  string
	Agents       []api.Agent
	AgentsErr    string
	ProjectNames map[string]string
	// More: a list was cut at its first page.
	More bool
}

// AgentData is an agent's page.
type AgentData struct {
	Caller      string
	Agent       api.Agent
	ProjectName string
}

// agentRow is a row of the agents table: the agent and its project's
// name.
type agentRow struct {
	A       api.Agent
	Project string
}

var funcs = template.FuncMap{
	"agentRowData": func(a api.Agent, names map[string]string) agentRow {
		return agentRow{A: a, Project: names[a.ProjectID]}
	},
	"age": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		d := time.Since(t).Round(time.Second)
		switch {
		case d < time.Minute:
			return d.String()
		case d < time.Hour:
			return d.Round(time.Minute).String()
		}
		return d.Round(time.Hour).String()
	},
	"dash": func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	},
	"ports": func(ps []api.PortMapping) string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.String()
		}
		if len(out) == 0 {
			return "-"
		}
		return strings.Join(out, ", ")
	},
	"pin": func(p *api.PinnedRuntimeTarget) string {
		if p == nil {
			return "-"
		}
		return p.RuntimeTarget.String()
	},
	"target": func(t *api.RuntimeTarget) string {
		if t == nil {
			return "-"
		}
		return t.String()
	},
	"limit": func(n int) string {
		if n <= 0 {
			return "∞"
		}
		return strconv.Itoa(n)
	},
	"join": strings.Join,
	"profiles": func(ps []api.BrokerProfile) string {
		names := make([]string, len(ps))
		for i, p := range ps {
			names[i] = p.Name
		}
		if len(names) == 0 {
			return "-"
		}
		return strings.Join(names, ", ")
	},
}
