package broker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// harness describes how to run one kind of agent. The broker never talks to
// an LLM itself; it only starts the harness's command with its credentials.
type harness struct {
	// Image and Command are the defaults when the spec gives none.
	Image   string
	Command []string
	// AuthEnv names the environment variables that can authenticate the
	// harness; at least one of them must be set (if the list is not empty).
	AuthEnv []string
	// Home holds the files the harness expects in its home directory,
	// by path relative to it. Every agent gets a fresh broker-local home
	// built from them (a moved or recreated agent gets it rebuilt).
	Home map[string]string
}

// harnesses is the table of known harnesses, by AgentSpec.Harness. An empty
// name means generic.
var harnesses = map[string]harness{
	"generic": {},
	"claude": {
		Image:   "scion-claude:latest",
		Command: []string{"claude", "--dangerously-skip-permissions"},
		AuthEnv: api.HarnessAuthEnv["claude"],
		// Skip the first-run prompts that would block an agent with no
		// terminal, and keep the harness from phoning home for updates.
		Home: map[string]string{
			".claude.json":          `{"hasCompletedOnboarding": true, "autoUpdates": false}` + "\n",
			".claude/settings.json": `{"permissions": {"defaultMode": "bypassPermissions"}}` + "\n",
		},
	},
	"gemini": {
		Image:   "scion-gemini:latest",
		Command: []string{"gemini", "--yolo"},
		AuthEnv: api.HarnessAuthEnv["gemini"],
		Home: map[string]string{
			".gemini/settings.json": `{"autoAccept": true, "disableAutoUpdate": true}` + "\n",
		},
	},
}

// resolveHarness gives the image and command to run for spec, or an
// invalid_request error naming what is missing.
func resolveHarness(spec wire.AgentSpec) (image string, command []string, err error) {
	name := spec.Harness
	if name == "" {
		name = "generic"
	}
	h, ok := harnesses[name]
	if !ok {
		known := slices.Sorted(maps.Keys(harnesses))
		return "", nil, api.BadRequest("unknown harness %q (known: %s)", spec.Harness, strings.Join(known, ", "))
	}
	image, command = h.Image, h.Command
	if spec.Image != "" {
		image = spec.Image
	}
	if len(spec.Command) > 0 {
		command = spec.Command
	}
	if len(command) == 0 {
		return "", nil, api.BadRequest("harness %s needs a command", name)
	}
	if len(h.AuthEnv) > 0 && !slices.ContainsFunc(h.AuthEnv, func(k string) bool { return spec.Env[k] != "" || spec.Secrets[k] != "" }) {
		return "", nil, api.BadRequest("harness %s needs one of these environment variables: %s", name, strings.Join(h.AuthEnv, ", "))
	}
	return image, slices.Clone(command), nil
}

// buildHome writes the harness's home files into a fresh agent home. Paths
// come from the table above, never from a request, and stay inside home.
func buildHome(home, harnessName string) error {
	h := harnesses[cmp.Or(harnessName, "generic")]
	for rel, content := range h.Home {
		if err := writeHomeFile(home, rel, content); err != nil {
			return fmt.Errorf("harness %s: %w", harnessName, err)
		}
	}
	return nil
}

// writeHandoff writes a reincarnated agent's preamble and handoff where
// the new generation reads it (api.HandoffFile in its home); nothing for
// an agent without one.
func writeHandoff(home, handoff string) error {
	if handoff == "" {
		return nil
	}
	return writeHomeFile(home, api.HandoffFile, handoff)
}

// writeHomeFile writes content to rel (slash-separated) in home. The home
// is the agent's to write (its container mounts it): nothing in it is
// followed, not a symlinked directory on the way, not a symlink in the
// file's place, so that a link an agent planted cannot make the broker
// write elsewhere.
func writeHomeFile(home, rel, content string) error {
	p := filepath.Join(home, filepath.FromSlash(rel))
	if !strings.HasPrefix(p, home+string(filepath.Separator)) {
		return fmt.Errorf("home file %q escapes the home", rel)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s in the agent's home is not a directory", rel)
		}
		if d == home {
			break
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
