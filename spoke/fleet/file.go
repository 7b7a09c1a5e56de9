package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// FileName is the fleet file's name beside settings.yaml.
const FileName = "clusters.toml"

// Fleet is the clusters a broker may run Jobs on, by name.
type Fleet struct {
	Clusters map[string]*Cluster
}

// fileShape is the fleet file's document.
type fileShape struct {
	Clusters map[string]*Cluster `toml:"clusters"`
}

// Parse reads a fleet file's bytes; source names it in errors (URLs'
// userinfo redacted: the decoder quotes values). Unknown keys are refused:
// a misspelt proxy_url would otherwise silently make a cluster public.
func Parse(source string, b []byte) (*Fleet, error) {
	f, err := parse(source, b)
	return f, api.RedactError(err)
}

func parse(source string, b []byte) (*Fleet, error) {
	var doc fileShape
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("%s: unknown key %s", source, strings.Join(keys, ", "))
	}
	f := &Fleet{Clusters: map[string]*Cluster{}}
	for name, c := range doc.Clusters {
		if c == nil {
			c = &Cluster{}
		}
		c.Name = name
		f.Clusters[name] = c
	}
	return f, f.validate(source)
}

func (f *Fleet) validate(source string) error {
	for _, name := range f.Names() {
		if err := f.Clusters[name].Validate(source); err != nil {
			return err
		}
	}
	return nil
}

// Names are the clusters' names, sorted.
func (f *Fleet) Names() []string {
	ns := make([]string, 0, len(f.Clusters))
	for n := range f.Clusters {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Path is where the fleet file is: explicit (--clusters PATH) when set,
// else clusters.toml beside settingsPath (config.SettingsPath()).
func Path(settingsPath, explicit string) string {
	if explicit != "" {
		return explicit
	}
	return filepath.Join(filepath.Dir(settingsPath), FileName)
}

// Load reads the fleet file at path. A missing file is an empty fleet
// when it is the default place, and an error when it was named
// explicitly (a --clusters that points nowhere is a mistake).
func Load(path string, explicit bool) (*Fleet, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return &Fleet{Clusters: map[string]*Cluster{}}, nil
	}
	if err != nil {
		return nil, api.RedactError(fmt.Errorf("fleet file: %w", err))
	}
	return Parse(path, b)
}

// ForProfile is the fleet as profile p sees it: the file's blocks with
// p's clusters blocks over them. A profile's block replaces the file's
// block of that name whole (fields are not merged: a tier's fields only
// make sense together). source names the settings file in errors.
func (f *Fleet) ForProfile(p config.ProfileSettings, source string) (*Fleet, error) {
	out, err := f.forProfile(p, source)
	return out, api.RedactError(err)
}

func (f *Fleet) forProfile(p config.ProfileSettings, source string) (*Fleet, error) {
	out := &Fleet{Clusters: make(map[string]*Cluster, len(f.Clusters)+len(p.Clusters))}
	for n, c := range f.Clusters {
		out.Clusters[n] = c
	}
	for n, s := range p.Clusters {
		src := fmt.Sprintf("%s (profile %s)", source, p.Name)
		c, err := fromSettings(n, s)
		if err != nil {
			return nil, fmt.Errorf("%s: clusters.%s: %w", src, n, err)
		}
		if err := c.Validate(src); err != nil {
			return nil, err
		}
		out.Clusters[n] = c
	}
	return out, nil
}

// Target is the cluster a profile's Jobs run on: nil (and no error) when
// the profile names none, meaning the broker's ambient cluster exactly as
// before; an error when it names a cluster the fleet lacks.
func (f *Fleet) Target(p config.ProfileSettings) (*Cluster, error) {
	if p.Jobs == nil || p.Jobs.Cluster == "" {
		return nil, nil
	}
	c, ok := f.Clusters[p.Jobs.Cluster]
	if !ok {
		return nil, fmt.Errorf("profile %s: jobs.cluster %q is not in the fleet (clusters: %s)", p.Name, p.Jobs.Cluster, strings.Join(f.Names(), ", "))
	}
	return c, nil
}

func fromSettings(name string, s config.ClusterSettings) (*Cluster, error) {
	c := &Cluster{Name: name, KubeconfigSecret: s.KubeconfigSecret, HostAliases: s.HostAliases,
		ProxyURL: s.ProxyURL, Namespace: s.Namespace, Queue: s.Queue, RunAsUser: s.RunAsUser, RunAsGroup: s.RunAsGroup}
	var err error
	if c.ConnectTimeout, err = parseSetting(s.ConnectTimeout); err != nil {
		return nil, fmt.Errorf("connect_timeout: %w", err)
	}
	if c.RequestTimeout, err = parseSetting(s.RequestTimeout); err != nil {
		return nil, fmt.Errorf("request_timeout: %w", err)
	}
	if c.StatusRetry, err = parseSetting(s.StatusRetry); err != nil {
		return nil, fmt.Errorf("status_retry: %w", err)
	}
	if b := s.Bastion; b != nil {
		c.Bastion = &Bastion{Host: b.Host, User: b.User, KeySecret: b.KeySecret, KnownHosts: b.KnownHosts,
			KeepaliveMax: b.KeepaliveMax}
		if c.Bastion.KeepaliveInterval, err = parseSetting(b.KeepaliveInterval); err != nil {
			return nil, fmt.Errorf("bastion.keepalive_interval: %w", err)
		}
	}
	return c, nil
}

// Options is o with c's own timeouts over it.
func (c *Cluster) Options(o Options) Options {
	if c.ConnectTimeout.D > 0 {
		o.ConnectTimeout = c.ConnectTimeout.D
	}
	if c.RequestTimeout.D > 0 {
		o.RequestTimeout = c.RequestTimeout.D
	}
	return o
}
