package api

import "testing"

func TestRedactEnvHidesCredentials(t *testing.T) {
	in := map[string]string{"ANTHROPIC_API_KEY": "sk-live", "GITHUB_TOKEN": "ghp", "db_password": "pw", "MODE": "fast", "EMPTY_TOKEN": ""}
	out := RedactEnv(in)
	for k, want := range map[string]string{"ANTHROPIC_API_KEY": Redacted, "GITHUB_TOKEN": Redacted, "db_password": Redacted, "MODE": "fast", "EMPTY_TOKEN": ""} {
		if out[k] != want {
			t.Errorf("%s = %q, want %q", k, out[k], want)
		}
	}
	if in["ANTHROPIC_API_KEY"] != "sk-live" {
		t.Fatal("RedactEnv changed its input")
	}
}
