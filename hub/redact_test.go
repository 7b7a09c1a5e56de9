package hub

import "testing"

func TestRedactEnv(t *testing.T) {
	in := map[string]string{"ANTHROPIC_API_KEY": "sk-live", "GITHUB_TOKEN": "ghp", "db_password": "pw", "MODE": "fast", "EMPTY_TOKEN": ""}
	out := redactEnv(in)
	for k, want := range map[string]string{"ANTHROPIC_API_KEY": redacted, "GITHUB_TOKEN": redacted, "db_password": redacted, "MODE": "fast", "EMPTY_TOKEN": ""} {
		if out[k] != want {
			t.Errorf("%s = %q, want %q", k, out[k], want)
		}
	}
	if in["ANTHROPIC_API_KEY"] != "sk-live" {
		t.Fatal("redactEnv changed its input")
	}
}
