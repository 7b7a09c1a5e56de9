package cli

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// Where a hubTarget came from, for messages.
const (
	sourceFlag        = "--hub"
	sourceHubList     = "hub list"
	sourceWorkstation = "workstation"
)

// hubTarget is the Hub a command talks to and the bearer token it uses.
type hubTarget struct {
	URL    string // no trailing slash
	Token  string
	Name   string // hub list nickname; "" when the Hub is not in the list
	Source string // sourceFlag, an env variable name, sourceHubList or sourceWorkstation
	// agentTokenFile is where a renewed agent token goes (inside an
	// agent: agent_token.go); "" elsewhere.
	agentTokenFile string
}

// hubInputs is everything hub resolution reads, so that the order can be
// table-tested without files or a process environment.
type hubInputs struct {
	Flag        string
	Getenv      func(string) string
	Hubs        *config.HubList
	Workstation *config.Workstation // nil: no workstation Hub on this host
	// AgentTokenFile is the path of the agent's stored token and
	// AgentToken its content ("" when none).
	AgentTokenFile, AgentToken string
}

// errNoHub tells a user with nothing configured what to do.
var errNoHub = fmt.Errorf("no Hub selected: run 'scion server start --workstation' for a local Hub, " +
	"or 'scion hub add <name> <hub-url> --use' to use a remote one (or pass --hub)")

// resolveHub picks the Hub, in order: --hub; SCION_HUB_ENDPOINT, then
// SCION_HUB_URL (inside an agent container); the hub list's current hub;
// the local workstation Hub.
func resolveHub(in hubInputs) (*hubTarget, error) {
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

func pickHub(in hubInputs) (*hubTarget, error) {
	if in.Flag != "" {
		name, e, err := in.Hubs.Lookup(in.Flag)
		if err != nil {
			return nil, err
		}
		u, err := normalizeHubURL(e.URL)
		if err != nil {
			return nil, fmt.Errorf("--hub %s: %w", in.Flag, err)
		}
		return &hubTarget{URL: u, Token: e.Token, Name: name, Source: sourceFlag}, nil
	}
	for _, env := range []string{api.EnvHubEndpoint, api.EnvHubURL} {
		if v := strings.TrimSpace(in.Getenv(env)); v != "" {
			u, err := normalizeHubURL(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", env, err)
			}
			// Inside an agent container the agent's own identity is the
			// caller, even if the URL also appears in a hub list.
			tok := pickAgentToken(in.Getenv(api.EnvAgentToken), in.AgentToken, in.Getenv(api.EnvAgentID))
			return &hubTarget{URL: u, Token: tok, Source: env, agentTokenFile: in.AgentTokenFile}, nil
		}
	}
	if cur := in.Hubs.Current; cur != "" {
		e, ok := in.Hubs.Hubs[cur]
		if !ok {
			return nil, fmt.Errorf("the current hub %q is not in the hub list (%s): run 'scion hub use <name>'", cur, config.HubListPath())
		}
		u, err := normalizeHubURL(e.URL)
		if err != nil {
			return nil, fmt.Errorf("hub %q: %w", cur, err)
		}
		return &hubTarget{URL: u, Token: e.Token, Name: cur, Source: sourceHubList}, nil
	}
	if w := in.Workstation; w != nil && w.URL != "" {
		u, err := normalizeHubURL(w.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.WorkstationPath(), err)
		}
		return &hubTarget{URL: u, Token: w.AdminToken, Source: sourceWorkstation}, nil
	}
	return nil, errNoHub
}

// tokenFor finds a token for a Hub named by a bare URL or the environment
// that gave none: a hub list entry with the same URL, the agent token when
// the URL is the environment's Hub, or the workstation admin token when it
// is the local workstation Hub. It is never used for a hub list entry.
func tokenFor(in hubInputs, t *hubTarget) string {
	for _, name := range in.Hubs.Names() {
		if e := in.Hubs.Hubs[name]; sameURL(e.URL, t.URL) && e.Token != "" {
			return e.Token
		}
	}
	for _, env := range []string{api.EnvHubEndpoint, api.EnvHubURL} {
		if v := in.Getenv(env); v != "" && sameURL(v, t.URL) {
			if tok := in.Getenv(api.EnvAgentToken); tok != "" {
				return tok
			}
		}
	}
	if w := in.Workstation; w != nil && sameURL(w.URL, t.URL) {
		return w.AdminToken
	}
	return ""
}

// loadHub resolves the Hub from the real files and environment.
func loadHub(flag string) (*hubTarget, error) {
	hubs, err := config.LoadHubList()
	if err != nil {
		return nil, err
	}
	ws, err := config.LoadWorkstation()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.WorkstationPath(), err)
	}
	in := hubInputs{Flag: flag, Getenv: os.Getenv, Hubs: hubs, Workstation: ws}
	if os.Getenv(api.EnvHubEndpoint) != "" || os.Getenv(api.EnvHubURL) != "" {
		in.AgentTokenFile = agentTokenPath()
		in.AgentToken = readAgentTokenFile(in.AgentTokenFile)
	}
	return resolveHub(in)
}

// normalizeHubURL checks that u is an absolute http(s) URL and drops a
// trailing slash, so that one Hub has one spelling in every file.
func normalizeHubURL(u string) (string, error) {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", u)
	}
	return strings.TrimRight(p.String(), "/"), nil
}

func sameURL(a, b string) bool {
	return a != "" && strings.TrimRight(strings.TrimSpace(a), "/") == strings.TrimRight(strings.TrimSpace(b), "/")
}
