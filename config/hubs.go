package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// HubEntry is one Hub in the CLI's hub list.
type HubEntry struct {
	URL   string `yaml:"url"`
	Token string `yaml:"token,omitempty"`
	// CA is the PEM file of the CA that signed the Hub's TLS certificate
	// (hubs.<name>.ca), for a Hub under a private CA; "" trusts the
	// system's roots.
	CA string `yaml:"ca,omitempty"`
}

// HubList is hubs.yaml.
type HubList struct {
	Current string               `yaml:"current,omitempty"`
	Hubs    map[string]*HubEntry `yaml:"hubs"`
}

// HubListPath is the hub list file.
func HubListPath() string { return Path("hubs.yaml") }

// LoadHubList reads hubs.yaml; a missing file gives an empty list.
func LoadHubList() (*HubList, error) {
	l := &HubList{Hubs: map[string]*HubEntry{}}
	b, err := os.ReadFile(HubListPath())
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("config: %s: %w", HubListPath(), err)
	}
	if l.Hubs == nil {
		l.Hubs = map[string]*HubEntry{}
	}
	return l, nil
}

// Save writes hubs.yaml (0600: it holds tokens).
func (l *HubList) Save() error {
	b, err := yaml.Marshal(l)
	if err != nil {
		return err
	}
	return WriteFileAtomic(HubListPath(), b, 0o600)
}

// Names returns the hub nicknames, sorted.
func (l *HubList) Names() []string {
	n := make([]string, 0, len(l.Hubs))
	for k := range l.Hubs {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Lookup resolves a --hub value: a nickname in the list, or a URL. It
// returns the nickname ("" for a bare URL) and the entry.
func (l *HubList) Lookup(v string) (string, *HubEntry, error) {
	if e, ok := l.Hubs[v]; ok {
		return v, e, nil
	}
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		// Several entries may share a URL (an admin and a read-only
		// sign-in, say): take the first by name, never whichever the map
		// yields, so one URL always means the same credentials.
		u := strings.TrimRight(v, "/")
		for _, name := range l.Names() {
			if e := l.Hubs[name]; strings.TrimRight(e.URL, "/") == u {
				return name, e, nil
			}
		}
		return "", &HubEntry{URL: u}, nil
	}
	return "", nil, fmt.Errorf("unknown hub %q: not a hub list nickname or an http(s) URL", v)
}
