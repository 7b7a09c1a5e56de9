package broker

import (
	"slices"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

func TestResolveHarness(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      wire.AgentSpec
		wantImage string
		wantCmd   []string
		wantErr   bool
	}{
		{"generic runs the command", wire.AgentSpec{Command: []string{"sh", "-c", "x"}}, "", []string{"sh", "-c", "x"}, false},
		{"generic needs a command", wire.AgentSpec{Harness: "generic"}, "", nil, true},
		{"unknown harness", wire.AgentSpec{Harness: "cobol", Command: []string{"x"}}, "", nil, true},
		{"claude defaults", wire.AgentSpec{Harness: "claude", Env: map[string]string{"ANTHROPIC_API_KEY": "k"}},
			harnesses["claude"].Image, harnesses["claude"].Command, false},
		{"claude with oauth token and own image", wire.AgentSpec{Harness: "claude", Image: "mine", Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}},
			"mine", harnesses["claude"].Command, false},
		{"claude without credentials", wire.AgentSpec{Harness: "claude"}, "", nil, true},
		{"gemini with its key", wire.AgentSpec{Harness: "gemini", Env: map[string]string{"GEMINI_API_KEY": "k"}},
			harnesses["gemini"].Image, harnesses["gemini"].Command, false},
		{"gemini with an empty key", wire.AgentSpec{Harness: "gemini", Env: map[string]string{"GEMINI_API_KEY": ""}}, "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			image, cmd, err := resolveHarness(tc.spec)
			if tc.wantErr {
				if !api.IsCode(err, api.CodeInvalidRequest) {
					t.Fatalf("err = %v, want invalid_request", err)
				}
				return
			}
			if err != nil || image != tc.wantImage || !slices.Equal(cmd, tc.wantCmd) {
				t.Fatalf("got (%q, %q, %v), want (%q, %q)", image, cmd, err, tc.wantImage, tc.wantCmd)
			}
		})
	}
}
