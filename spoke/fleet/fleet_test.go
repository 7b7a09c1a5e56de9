package fleet

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/config"
)

const knownHosts = "bastion.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

func TestParseTiers(t *testing.T) {
	doc := `
[clusters.wharf]
kubeconfig_secret = "spoke_wharf_kubeconfig"
namespace = "gpu-jobs"
queue = "h200"

[clusters.dark]
kubeconfig_secret = "DARK"
host_aliases = { "api.spoke.example" = "10.0.0.1" }

[clusters.pok]
kubeconfig_secret = "POK"
proxy_url = "http://10.0.0.9:3128"

[clusters.b200]
kubeconfig_secret = "B200"
host_aliases = { "api.b200.internal" = "192.168.1.5" }
[clusters.b200.bastion]
host = "bastion.example:2222"
user = "scion"
key_secret = "B200_SSH_KEY"
known_hosts = "` + knownHosts + `"
`
	f, err := Parse("clusters.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Tier{"wharf": TierPublic, "dark": TierHostAliases, "pok": TierProxy, "b200": TierBastion}
	for name, tier := range want {
		c := f.Clusters[name]
		if c == nil || c.Name != name || c.Tier() != tier {
			t.Errorf("%s: got %+v, want tier %s", name, c, tier)
		}
	}
	if w := f.Clusters["wharf"]; w.Namespace != "gpu-jobs" || w.Queue != "h200" {
		t.Errorf("wharf defaults: %+v", w)
	}
	if b := f.Clusters["b200"].Bastion; b.Address() != "bastion.example:2222" || b.KeySecret != "B200_SSH_KEY" {
		t.Errorf("bastion: %+v", b)
	}
	if got := strings.Join(f.Names(), ","); got != "b200,dark,pok,wharf" {
		t.Errorf("names %s", got)
	}
}

func TestParseRefusals(t *testing.T) {
	ok := `kubeconfig_secret = "K"` + "\n"
	bastion := "[clusters.x.bastion]\nhost = \"b\"\nuser = \"u\"\nkey_secret = \"KEY\"\n"
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown key", "[clusters.x]\n" + ok + "proxy_ur = \"http://p:3128\"\n", "f.toml: unknown key clusters.x.proxy_ur"},
		{"unknown bastion key", "[clusters.x]\n" + ok + bastion + "known_hosts = \"" + knownHosts + "\"\nport = 22\n", "unknown key clusters.x.bastion.port"},
		{"no kubeconfig", "[clusters.x]\nnamespace = \"n\"\n", "f.toml: clusters.x.kubeconfig_secret: required"},
		{"secret name rule", "[clusters.x]\nkubeconfig_secret = \"spoke-kubeconfig\"\n", `clusters.x.kubeconfig_secret: "spoke-kubeconfig" is not a secret name`},
		{"cluster name", "[clusters.Wharf_1]\n" + ok, "f.toml: clusters.Wharf_1: the cluster name is not a DNS label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"},
		// The broker's own cluster is "ambient" on its Jobs, in the Hub's
		// ledger and in its sweep: a block of that name would pass for it
		// (and leave the real one unswept).
		{"the ambient cluster's name", "[clusters.ambient]\n" + ok, "clusters.ambient: the name ambient is the broker's own cluster"},
		{"alias not an IP", "[clusters.x]\n" + ok + "host_aliases = { \"api.x\" = \"api.y\" }\n", `clusters.x.host_aliases: "api.x" maps to "api.y", which is not an IP address`},
		{"alias host", "[clusters.x]\n" + ok + "host_aliases = { \"api.x:6443\" = \"10.0.0.1\" }\n", `clusters.x.host_aliases: "api.x:6443" is not a host name`},
		{"proxy scheme", "[clusters.x]\n" + ok + "proxy_url = \"socks5://p:1080\"\n", "clusters.x.proxy_url: \"socks5://p:1080\" is not an http:// or https:// proxy URL"},
		{"proxy and bastion", "[clusters.x]\n" + ok + "proxy_url = \"http://p:3128\"\n" + bastion + "known_hosts = \"" + knownHosts + "\"\n", "clusters.x.proxy_url: cannot be combined with a bastion block"},
		{"proxy and aliases", "[clusters.x]\n" + ok + "proxy_url = \"http://p:3128\"\nhost_aliases = { \"api.x\" = \"10.0.0.1\" }\n", "clusters.x.proxy_url: cannot be combined with host_aliases"},
		{"namespace", "[clusters.x]\n" + ok + "namespace = \"Jobs\"\n", `clusters.x.namespace: "Jobs" is not a DNS label: at most 63`},
		{"queue", "[clusters.x]\n" + ok + "queue = \"H200\"\n", `clusters.x.queue: invalid queue "H200": a queue is a Kueue LocalQueue name`},
		{"no known_hosts", "[clusters.x]\n" + ok + bastion, "clusters.x.bastion.known_hosts: required"},
		{"known_hosts not base64", "[clusters.x]\n" + ok + bastion + "known_hosts = \"b ssh-ed25519 !!!\"\n", "clusters.x.bastion.known_hosts: the key is not base64"},
		{"bastion key secret", "[clusters.x]\n" + ok + "[clusters.x.bastion]\nhost = \"b\"\nuser = \"u\"\nknown_hosts = \"" + knownHosts + "\"\n", "clusters.x.bastion.key_secret"},
		{"bastion user", "[clusters.x]\n" + ok + "[clusters.x.bastion]\nhost = \"b\"\n", "clusters.x.bastion.user: required"},
		{"syntax", "[clusters.x\n", "f.toml: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.toml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestPathAndLoad(t *testing.T) {
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.yaml")
	if got := Path(settings, ""); got != filepath.Join(dir, "clusters.toml") {
		t.Errorf("default path %s", got)
	}
	if got := Path(settings, "/etc/fleet.toml"); got != "/etc/fleet.toml" {
		t.Errorf("explicit path %s", got)
	}
	f, err := Load(Path(settings, ""), false)
	if err != nil || len(f.Clusters) != 0 {
		t.Errorf("missing default file: %v %v", f, err)
	}
	if _, err := Load(filepath.Join(dir, "nope.toml"), true); err == nil {
		t.Error("a missing explicit --clusters file loaded")
	}
	os.WriteFile(Path(settings, ""), []byte("[clusters.wharf]\nkubeconfig_secret = \"W\"\n"), 0o600)
	if f, err := Load(Path(settings, ""), false); err != nil || f.Clusters["wharf"] == nil {
		t.Errorf("load: %v %v", f, err)
	}
}

func TestForProfileAndTarget(t *testing.T) {
	file, err := Parse("clusters.toml", []byte("[clusters.wharf]\nkubeconfig_secret = \"W\"\nproxy_url = \"http://p:3128\"\n[clusters.dark]\nkubeconfig_secret = \"D\"\nhost_aliases = { \"api.d\" = \"10.0.0.2\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := config.ProfileSettings{Name: "gpu", Jobs: &config.ProfileJobs{Cluster: "wharf"}, Clusters: map[string]config.ClusterSettings{
		// Replaces the file's wharf whole: no proxy_url left over.
		"wharf": {KubeconfigSecret: "W2", Namespace: "mine"},
		"extra": {KubeconfigSecret: "E", Bastion: &config.BastionSettings{Host: "b", User: "u", KeySecret: "K", KnownHosts: knownHosts}},
	}}
	f, err := file.ForProfile(p, "settings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Target(p)
	if err != nil || c.KubeconfigSecret != "W2" || c.Tier() != TierPublic || c.Namespace != "mine" {
		t.Errorf("target %+v %v: the profile's block must win whole", c, err)
	}
	if f.Clusters["extra"].Tier() != TierBastion || f.Clusters["dark"].Tier() != TierHostAliases {
		t.Errorf("added or kept blocks: %v", f.Names())
	}
	if file.Clusters["wharf"].KubeconfigSecret != "W" {
		t.Error("ForProfile changed the file's fleet")
	}
	if c, err := f.Target(config.ProfileSettings{Name: "plain"}); c != nil || err != nil {
		t.Errorf("no jobs.cluster must mean the ambient cluster: %v %v", c, err)
	}
	if _, err := f.Target(config.ProfileSettings{Name: "gpu", Jobs: &config.ProfileJobs{Cluster: "nowhere"}}); err == nil || !strings.Contains(err.Error(), `jobs.cluster "nowhere"`) {
		t.Errorf("unknown cluster: %v", err)
	}
	bad := config.ProfileSettings{Name: "gpu", Clusters: map[string]config.ClusterSettings{"wharf": {KubeconfigSecret: "W", ProxyURL: "ftp://x"}}}
	if _, err := file.ForProfile(bad, "settings.yaml"); err == nil || !strings.Contains(err.Error(), "settings.yaml (profile gpu): clusters.wharf.proxy_url") {
		t.Errorf("bad profile block: %v", err)
	}
}

func jwt(claims string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(`{"alg":"RS256"}`)) + "." + e([]byte(claims)) + "." + e([]byte("sig"))
}

func TestBoundTokenWarning(t *testing.T) {
	for _, tc := range []struct {
		token string
		warn  bool
	}{
		{jwt(`{"sub":"system:serviceaccount:ns:sa","exp":1900000000}`), true},
		{jwt(`{"sub":"system:serviceaccount:ns:sa"}`), false}, // Secret-based: no exp
		{"scion-broker-token", false},
		{"a.b.c", false},
	} {
		w := boundTokenWarning("wharf", tc.token)
		if (w != "") != tc.warn || (tc.warn && !strings.Contains(w, "cluster wharf")) {
			t.Errorf("%s: warning %q, want %v", tc.token, w, tc.warn)
		}
	}
}

func TestUnreachableJSON(t *testing.T) {
	b, _ := json.Marshal(&UnreachableError{Cluster: "b200", Tier: TierBastion, Message: "dial: refused"})
	if string(b) != `{"status":"error","cluster":"b200","tier":"bastion","message":"dial: refused"}` {
		t.Errorf("got %s", b)
	}
}

func TestKubeconfigMustBeSelfContained(t *testing.T) {
	head := "apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: https://api.x:6443\n"
	tail := "contexts:\n- name: s\n  context: {cluster: s, user: u}\ncurrent-context: s\n"
	c := &Cluster{Name: "wharf", KubeconfigSecret: "W"}
	for _, tc := range []struct{ name, cluster, user, want string }{
		{"embedded", "", "    token: abc\n", ""},
		{"exec plugin", "", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id], interactiveMode: Never}\n", "exec credential plugin"},
		{"token file", "", "    tokenFile: /etc/shadow\n", "file references"},
		{"client key file", "", "    client-certificate: /c.pem\n    client-key: /k.pem\n", "file references"},
		{"CA file", "    certificate-authority: /etc/ssl/ca.pem\n", "    token: abc\n", "certificate-authority file is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := head + tc.cluster + "users:\n- name: u\n  user:\n" + tc.user + tail
			_, _, err := RESTConfig(c, []byte(kc), Options{})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cluster wharf")) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestClusterTimeouts: connect_timeout, request_timeout and the bastion's
// keepalives are read from the fleet file and a profile's block, override
// the broker's Options, and are bounded.
func TestClusterTimeouts(t *testing.T) {
	f, err := Parse("clusters.toml", []byte(`
[clusters.b200]
kubeconfig_secret = "K"
connect_timeout = "2s"
request_timeout = "30s"
status_retry = "1m"
[clusters.b200.bastion]
host = "bastion.example"
user = "scion"
key_secret = "KEY"
known_hosts = "`+knownHosts+`"
keepalive_interval = "5s"
keepalive_max = 2
`))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Clusters["b200"]
	o := c.Options(Options{ConnectTimeout: 9 * time.Second, RequestTimeout: time.Minute})
	if o.ConnectTimeout != 2*time.Second || o.RequestTimeout != 30*time.Second {
		t.Fatalf("options %+v", o)
	}
	if c.StatusRetry.D != time.Minute {
		t.Fatalf("status_retry %v", c.StatusRetry.D)
	}
	if c.Bastion.KeepaliveInterval.D != 5*time.Second || c.Bastion.KeepaliveMax != 2 {
		t.Fatalf("bastion %+v", c.Bastion)
	}
	if o := (&Cluster{}).Options(Options{ConnectTimeout: 9 * time.Second}); o.ConnectTimeout != 9*time.Second {
		t.Fatalf("no override: %+v", o)
	}
	// A duration too short to be meant is refused too: a keepalive every
	// nanosecond is a busy loop against the bastion, and a connect or
	// request timeout of one fails every request.
	for _, bad := range []string{`connect_timeout = "soon"`, `connect_timeout = "11m"`, `request_timeout = "-1s"`, `status_retry = "1h"`, `connect_timeout = 5`,
		`connect_timeout = "1ns"`, `request_timeout = "10ms"`,
		"[clusters.x.bastion]\nhost = \"b\"\nuser = \"u\"\nkey_secret = \"KEY\"\nknown_hosts = \"" + knownHosts + "\"\nkeepalive_interval = \"1ns\"",
	} {
		_, err := Parse("clusters.toml", []byte("[clusters.x]\nkubeconfig_secret = \"K\"\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "clusters.toml") {
			t.Errorf("%s: err %v", bad, err)
		}
	}
	p := config.ProfileSettings{Name: "gpu", Clusters: map[string]config.ClusterSettings{
		"x": {KubeconfigSecret: "K", ConnectTimeout: "1s"}, "y": {KubeconfigSecret: "K", ConnectTimeout: "later"}}}
	if _, err := (&Fleet{}).ForProfile(p, "settings.yaml"); err == nil || !strings.Contains(err.Error(), "clusters.y: connect_timeout") {
		t.Fatalf("profile error %v", err)
	}
	delete(p.Clusters, "y")
	pf, err := (&Fleet{}).ForProfile(p, "settings.yaml")
	if err != nil || pf.Clusters["x"].ConnectTimeout.D != time.Second {
		t.Fatalf("profile fleet %v %+v", err, pf)
	}
}

// TestClusterRunAs: run_as_user and run_as_group are read from the fleet
// file and a profile's block (0, root, is a value, not "unset"), and
// bounded.
func TestClusterRunAs(t *testing.T) {
	f, err := Parse("clusters.toml", []byte("[clusters.r]\nkubeconfig_secret = \"K\"\nrun_as_user = 0\nrun_as_group = 1000\n[clusters.d]\nkubeconfig_secret = \"K\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Clusters["r"]; c.RunAsUser == nil || *c.RunAsUser != 0 || c.RunAsGroup == nil || *c.RunAsGroup != 1000 {
		t.Fatalf("run_as: %+v", c)
	}
	if c := f.Clusters["d"]; c.RunAsUser != nil || c.RunAsGroup != nil {
		t.Fatalf("unset run_as: %+v", c)
	}
	for _, bad := range []string{"run_as_user = -1", "run_as_group = 2147483648", `run_as_user = "root"`} {
		_, err := Parse("clusters.toml", []byte("[clusters.x]\nkubeconfig_secret = \"K\"\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "clusters.toml") {
			t.Errorf("%s: err %v", bad, err)
		}
	}
	uid := int64(4242)
	pf, err := (&Fleet{}).ForProfile(config.ProfileSettings{Name: "gpu", Clusters: map[string]config.ClusterSettings{
		"x": {KubeconfigSecret: "K", RunAsUser: &uid}}}, "settings.yaml")
	if err != nil || pf.Clusters["x"].RunAsUser == nil || *pf.Clusters["x"].RunAsUser != 4242 {
		t.Fatalf("profile run_as_user: %v %+v", err, pf)
	}
	neg := int64(-5)
	if _, err := (&Fleet{}).ForProfile(config.ProfileSettings{Name: "gpu", Clusters: map[string]config.ClusterSettings{
		"x": {KubeconfigSecret: "K", RunAsUser: &neg}}}, "settings.yaml"); err == nil || !strings.Contains(err.Error(), "run_as_user") {
		t.Fatalf("profile run_as_user -5: %v", err)
	}
}
