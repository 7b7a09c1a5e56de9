package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"empty", "", nil},
		{"every known key", `
server:
  broker:
    hub_endpoint: https://hub
    broker_id: b
    name: n
    runtime: fake
    data_dir: /d
    allow_passthrough: [gcp]
    kubernetes:
      kubeconfig: /k
      scion_image: i
      image_volume: true
      defaults: {namespace: agents, anything_goes: x}
      agent_contexts: [gpu]
      agent_namespaces: [agents-gpu]
      agent_service_accounts: [scion-agent-gpu]
    profiles:
      - name: batch
        runtime: kubernetes
        default: true
        settings: {context: c, whatever: y}
        jobs: {cluster: wharf}
        clusters:
          wharf:
            kubeconfig_secret: K
            host_aliases: {api.x: 10.0.0.1}
            proxy_url: http://p:3128
            namespace: n
            queue: q
            bastion: {host: b, user: u, key_secret: S, known_hosts: "b ssh-ed25519 AAAA"}
  hub:
    listen: 127.0.0.1:1
    db: /db
    oidc:
      issuer: https://id
      client_id: c
      client_secret_file: /s
      default_role: viewer
      admin_emails: [a@b]
`, nil},
		{"the typo of the issue", "server:\n  broker:\n    runtme: fake\n",
			[]string{"server.broker.runtme (line 3): unknown key; did you mean runtime?"}},
		{"hub section", "server:\n  hub:\n    listn: 127.0.0.1:9\n    dbb: x\n",
			[]string{"server.hub.listn (line 3): unknown key; did you mean listen?", "server.hub.dbb (line 4): unknown key; did you mean db?"}},
		{"oidc", "server:\n  hub:\n    oidc:\n      client-id: c\n",
			[]string{"server.hub.oidc.client-id (line 4): unknown key; did you mean client_id?"}},
		{"in a profile", "server:\n  broker:\n    profiles:\n      - name: a\n        defualt: true\n",
			[]string{"server.broker.profiles[0].defualt (line 5): unknown key; did you mean default?"}},
		{"in a profile's cluster block", "server:\n  broker:\n    profiles:\n      - name: a\n        clusters:\n          wharf:\n            proxy_ur: http://p\n            bastion: {hostt: b}\n",
			[]string{"server.broker.profiles[0].clusters.wharf.proxy_ur (line 7): unknown key; did you mean proxy_url?", "server.broker.profiles[0].clusters.wharf.bastion.hostt (line 8): unknown key; did you mean host?"}},
		{"in kubernetes", "server:\n  broker:\n    kubernetes:\n      kubeconfg: /k\n",
			[]string{"server.broker.kubernetes.kubeconfg (line 4): unknown key; did you mean kubeconfig?"}},
		{"far from every key", "server:\n  broker:\n    colour: blue\n",
			[]string{"server.broker.colour (line 3): unknown key; known keys here: agent_hub_endpoint, allow_local_git_remotes, allow_passthrough, broker_id, data_dir, hub_endpoint, instances, kubernetes, name, profiles, runtime"}},
		{"upper case", "server:\n  Broker:\n    runtime: fake\n",
			[]string{"server.Broker (line 2): unknown key; did you mean broker?"}},
		{"near miss at the top", "sever:\n  broker: {}\n",
			[]string{"sever (line 1): unknown key; did you mean server?"}},
		// Other tools' top-level keys are kept and not ours to judge.
		{"another tool's key", "harnesses:\n  claude: {}\nserver:\n  broker:\n    runtime: fake\n", nil},
		{"free-form maps", "server:\n  broker:\n    profiles:\n      - name: a\n        settings: {runtme: x}\n", nil},
		{"does not parse", "server: [", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnknownKeys([]byte(tc.doc)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("UnknownKeys:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// LoadSettings carries the warnings, and a save neither writes them nor
// drops the unknown key (the user may fix it by hand).
func TestLoadSettingsWarnsOfUnknownKeys(t *testing.T) {
	t.Setenv("SCION_HOME", t.TempDir())
	if err := os.WriteFile(SettingsPath(), []byte("server:\n  broker:\n    runtme: fake\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSettings()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "runtme") || !strings.Contains(s.Warnings[0], "did you mean runtime?") {
		t.Fatalf("warnings %q", s.Warnings)
	}
	if s.Server.Broker.Runtime != "" {
		t.Fatalf("runtime %q from a misspelt key", s.Server.Broker.Runtime)
	}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(SettingsPath())
	if strings.Contains(string(b), "arnings") || !strings.Contains(string(b), "runtme: fake") {
		t.Fatalf("saved:\n%s", b)
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"runtme", "runtime", 1}, {"kitten", "sitting", 3}, {"db", "db", 0}, {"listn", "listen", 1}} {
		if d := levenshtein(tc.a, tc.b); d != tc.d {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
