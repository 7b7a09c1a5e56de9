// Package hubconn decides which Hub a CLI command talks to and with which
// token: the --hub flag, the environment, the hub list or the
// workstation's Hub, in that order (Resolve, table-tested without files);
// inside an agent, the agent's token and its renewal (agent_token.go). Of
// ours it imports only api, client and config, as the rest of the CLI.
package hubconn

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/client/hubtls"
	"github.com/scion-go/scion/client/idtoken"
	"github.com/scion-go/scion/config"
)

// Where a Target came from, for messages.
const (
	sourceFlag        = "--hub"
	sourceHubList     = "hub list"
	sourceWorkstation = "workstation"
)

// Target is the Hub a command talks to and the bearer token it uses.
type Target struct {
	URL    string // no trailing slash
	Token  string
	Name   string // hub list nickname; "" when the Hub is not in the list
	Source string // sourceFlag, an env variable name, sourceHubList or sourceWorkstation
	// AgentTokenFile is where a renewed agent token goes (inside an
	// agent: agent_token.go); "" elsewhere.
	AgentTokenFile string
	// Transport is the Hub's transport auth (an ID token for IAP or Cloud
	// Run on every request); nil for none. See transport.go.
	Transport *idtoken.Auth
	// CAFile is the CA the Hub's certificate is checked against ("": the
	// system's roots): --ca, hubs.<name>.ca or SCION_HUB_CA. tlsBase is
	// the transport it makes (WithCA).
	CAFile  string
	tlsBase http.RoundTripper
}

// Inputs is everything hub resolution reads, so that the order can be
// table-tested without files or a process environment.
type Inputs struct {
	Flag        string
	Getenv      func(string) string
	Hubs        *config.HubList
	Workstation *config.Workstation // nil: no workstation Hub on this host
	// AgentTokenFile is the path of the agent's stored token and
	// AgentToken its content ("" when none).
	AgentTokenFile, AgentToken string
}

// ErrNoHub tells a user with nothing configured what to do.
var ErrNoHub = fmt.Errorf("no Hub selected: run 'scion server start --workstation' for a local Hub, " +
	"or 'scion hub add <name> <hub-url> --use' to use a remote one (or pass --hub)")

// Resolve picks the Hub, in order: --hub; SCION_HUB_ENDPOINT, then
// SCION_HUB_URL (inside an agent container); the hub list's current hub;
// the local workstation Hub.
func Resolve(in Inputs) (*Target, error) {
	t, err := pickHub(in)
	if err != nil {
		return nil, err
	}
	// A hub list entry speaks with its own credentials or none: an entry
	// that is not signed in must not borrow the token of another entry
	// (or of the workstation) that has the same URL, which could be an
	// admin's. Only a Hub named by a bare URL or by the environment looks
	// for a token elsewhere.
	if t.Token == "" && t.Name == "" {
		t.Token = tokenFor(in, t)
	}
	return t, nil
}

func pickHub(in Inputs) (*Target, error) {
	if in.Flag != "" {
		name, e, err := in.Hubs.Lookup(in.Flag)
		if err != nil {
			return nil, err
		}
		u, err := NormalizeURL(e.URL)
		if err != nil {
			return nil, fmt.Errorf("--hub %s: %w", in.Flag, err)
		}
		return &Target{URL: u, Token: e.Token, Name: name, Source: sourceFlag, CAFile: e.CA}, nil
	}
	for _, env := range []string{api.EnvHubEndpoint, api.EnvHubURL} {
		if v := strings.TrimSpace(in.Getenv(env)); v != "" {
			u, err := NormalizeURL(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", env, err)
			}
			// Inside an agent container the agent's own identity is the
			// caller, even if the URL also appears in a hub list.
			tok := pickAgentToken(in.Getenv(api.EnvAgentToken), in.AgentToken, in.Getenv(api.EnvAgentID))
			return &Target{URL: u, Token: tok, Source: env, AgentTokenFile: in.AgentTokenFile, CAFile: strings.TrimSpace(in.Getenv(api.EnvHubCA))}, nil
		}
	}
	if cur := in.Hubs.Current; cur != "" {
		e, ok := in.Hubs.Hubs[cur]
		if !ok {
			return nil, fmt.Errorf("the current hub %q is not in the hub list (%s): run 'scion hub use <name>'", cur, config.HubListPath())
		}
		u, err := NormalizeURL(e.URL)
		if err != nil {
			return nil, fmt.Errorf("hub %q: %w", cur, err)
		}
		return &Target{URL: u, Token: e.Token, Name: cur, Source: sourceHubList, CAFile: e.CA}, nil
	}
	if w := in.Workstation; w != nil && w.URL != "" {
		u, err := NormalizeURL(w.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.WorkstationPath(), err)
		}
		return &Target{URL: u, Token: w.AdminToken, Source: sourceWorkstation}, nil
	}
	return nil, ErrNoHub
}

// tokenFor finds a token for a Hub named by a bare URL or the environment
// that gave none: a hub list entry with the same URL, the agent token when
// the URL is the environment's Hub, or the workstation admin token when it
// is the local workstation Hub. It is never used for a hub list entry.
func tokenFor(in Inputs, t *Target) string {
	for _, name := range in.Hubs.Names() {
		if e := in.Hubs.Hubs[name]; SameURL(e.URL, t.URL) && e.Token != "" {
			return e.Token
		}
	}
	for _, env := range []string{api.EnvHubEndpoint, api.EnvHubURL} {
		if v := in.Getenv(env); v != "" && SameURL(v, t.URL) {
			if tok := in.Getenv(api.EnvAgentToken); tok != "" {
				return tok
			}
		}
	}
	if w := in.Workstation; w != nil && SameURL(w.URL, t.URL) {
		return w.AdminToken
	}
	return ""
}

// Load resolves the Hub from the real files and environment.
func Load(flag string) (*Target, error) {
	hubs, err := config.LoadHubList()
	if err != nil {
		return nil, err
	}
	ws, err := config.LoadWorkstation()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.WorkstationPath(), err)
	}
	in := Inputs{Flag: flag, Getenv: os.Getenv, Hubs: hubs, Workstation: ws}
	if os.Getenv(api.EnvHubEndpoint) != "" || os.Getenv(api.EnvHubURL) != "" {
		in.AgentTokenFile = agentTokenPath()
		in.AgentToken = readAgentTokenFile(in.AgentTokenFile)
	}
	t, err := Resolve(in)
	if err != nil {
		return nil, err
	}
	if err := WithTransport(t, nil); err != nil {
		return nil, err
	}
	if err := WithCA(t, t.CAFile); err != nil {
		return nil, err
	}
	return t, nil
}

// WithCA makes t check its Hub's certificate against the CA in path ("":
// the system's roots), read now so that a missing or malformed file is
// said before any request.
func WithCA(t *Target, path string) error {
	tr, err := hubtls.Transport(hubtls.Settings{CAFile: path})
	if err != nil {
		return fmt.Errorf("hub %s: %w", t.URL, err)
	}
	t.CAFile, t.tlsBase = path, nil
	if tr != nil {
		t.tlsBase = tr
	}
	return nil
}

// NormalizeURL checks that u is an absolute http(s) URL and drops a
// trailing slash, so that one Hub has one spelling in every file.
func NormalizeURL(u string) (string, error) {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", u)
	}
	return strings.TrimRight(p.String(), "/"), nil
}

func SameURL(a, b string) bool {
	return a != "" && strings.TrimRight(strings.TrimSpace(a), "/") == strings.TrimRight(strings.TrimSpace(b), "/")
}

// NewClient is the typed client of t's Hub with t's token.
func NewClient(t *Target) *client.Client {
	return client.New(t.URL, t.Token, client.WithUserAgent("scion-cli"), client.WithHTTPClient(t.httpClient()))
}
