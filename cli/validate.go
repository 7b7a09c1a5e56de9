package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
)

// validateName checks a new agent, project, broker, profile or hub-list
// name against the one name rule the Hub applies too (api.ValidName), so
// a name the CLI accepts is never refused by the Hub, and a typo is caught
// before a round trip.
func validateName(kind, name string) error {
	if err := api.CheckName(kind, name); err != nil {
		return usageErr(errors.New(api.AsError(err).Message))
	}
	return nil
}

// validateInput turns an api input check (the one the Hub applies) into a
// usage error, so a bad flag value is refused before a round trip.
func validateInput(err error) error {
	if err != nil {
		return usageErr(errors.New(api.AsError(err).Message))
	}
	return nil
}

// validateProfileFlag checks a profile named by a flag ("" is none).
func validateProfileFlag(flag, p string) error {
	if p == "" {
		return nil
	}
	return validateName("--"+flag+" profile", p)
}

// validateHarnessFlag checks a harness named by a flag ("" is the default).
func validateHarnessFlag(flag, h string) error {
	if h == "" {
		return nil
	}
	return validateInput(api.CheckHarness("--"+flag, h))
}

func validateSharingMode(m string) error {
	if !api.ValidSharingMode(m) {
		return usageErrorf("invalid --sharing-mode %q: use one of %s, %s, %s, %s", m,
			api.SharingWorktreePerAgent, api.SharingSharedWorkspace, api.SharingClonePerAgent, api.SharingEmptyPerAgent)
	}
	return nil
}

// parseEnv turns repeated --env K=V values into a map; a later K wins, as
// with docker run. The value may be empty and may contain '='.
func parseEnv(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageErrorf("invalid --env %q: use KEY=VALUE", kv)
		}
		if !api.ValidEnvName(k) {
			return nil, usageErrorf("invalid --env %q: %q is not a valid variable name", kv, k)
		}
		env[k] = v
	}
	return env, nil
}

// exactArgs is cobra.ExactArgs with a usage error naming the arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErrorf("%s takes %d argument(s) (%s), got %d", cmd.CommandPath(), len(names), strings.Join(names, ", "), len(args))
		}
		for i, a := range args {
			if a == "" {
				return usageErrorf("%s must not be empty", names[i])
			}
		}
		return nil
	}
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// nonEmptyFlag refuses a flag that was given as an empty string, which
// would otherwise silently mean "not set".
func nonEmptyFlag(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed && f.Value.String() == "" {
			return usageErrorf("--%s must not be empty", n)
		}
	}
	return nil
}

// projectFlag adds --project, defaulting (at run time) to SCION_PROJECT,
// then "default".
func projectFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "project", "", fmt.Sprintf("project (default: $%s, else \"default\")", api.EnvProject))
}
