package launch

import (
	"errors"
	"fmt"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/wire"
)

// brokerProfiles turns server.broker.profiles into what the broker offers
// in its hello: names must be valid and unique, and exactly one profile is
// the default (the first, when none says so).
func brokerProfiles(ps []config.ProfileSettings) ([]wire.Profile, error) {
	out := make([]wire.Profile, 0, len(ps))
	seen := map[string]bool{}
	defaults := 0
	for _, p := range ps {
		if err := api.CheckName("profile", p.Name); err != nil {
			return nil, fmt.Errorf("server.broker.profiles: %w", usageErr(errors.New(api.AsError(err).Message)))
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("server.broker.profiles: profile %q is listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Default {
			defaults++
		}
		out = append(out, wire.Profile{Name: p.Name, Runtime: p.Runtime, Default: p.Default, Settings: p.Settings})
	}
	switch {
	case defaults > 1:
		return nil, fmt.Errorf("server.broker.profiles: %d profiles say default: true; a broker has one default profile", defaults)
	case defaults == 0 && len(out) > 0:
		out[0].Default = true
	}
	return out, nil
}

// passthroughCapabilities turns server.broker.allow_passthrough into the
// capabilities the broker reports (passthrough:<kind>).
func passthroughCapabilities(kinds []string) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, "passthrough:"+k)
	}
	return out
}
