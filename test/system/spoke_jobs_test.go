package system

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/testenv/proxy"
	"github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/internal/wait"
)

// tierCase is one cluster of TestSpokeJobsPerTier's fleet.
type tierCase struct{ cluster, tier string }

// TestSpokeJobsPerTier: issue 16's acceptance over every tier. One spoke
// (the kube fixture's), five clusters on it in the broker's clusters.toml:
// public (the bootstrap kubeconfig), host_aliases (the kubeconfig naming
// the DNS-dark spoke-api.scion.invalid, aliased to 127.0.0.1), proxy
// (through a real tinyproxy) and bastion (through Debian's sshd with a
// pinned host key). The kubeconfigs and the SSH key are broker-scoped Hub
// secrets set with the CLI. An agent (a Docker container of the demo
// image, on a Docker broker) runs `scion job run` inside its container
// (scion exec) on each cluster; the
// test writes each Job's pod log with a result line once the Job shows on
// the spoke. Then: nothing the agent can read, nor the Hub's and broker's
// logs, holds the token, the CA or the SSH key.
func TestSpokeJobsPerTier(t *testing.T) {
	t.Parallel() // before the fixture (see requireKube)
	s := requireSpoke(t)
	requireDemoImage(t)
	bast := startBastion(t)
	ns, tok := spokeNamespace(t, s, "tiers")
	px := proxy.Start(t, spokePort(t, s))
	hub, token, admin := jobsHub(t)

	pub := s.KubeconfigBytes(s.URL, tok, ns)
	dark := s.KubeconfigBytes(s.DarkURL(), tok, ns)
	fleetFile := fmt.Sprintf(`
[clusters.pub]
kubeconfig_secret = "SPOKE_PUB_KUBECONFIG"
connect_timeout = "5s"

[clusters.dark]
kubeconfig_secret = "SPOKE_DARK_KUBECONFIG"
host_aliases = { %q = "127.0.0.1" }
connect_timeout = "5s"

[clusters.prox]
kubeconfig_secret = "SPOKE_PUB_KUBECONFIG"
proxy_url = %q
connect_timeout = "5s"

[clusters.bast]
kubeconfig_secret = "SPOKE_PUB_KUBECONFIG"
connect_timeout = "5s"
[clusters.bast.bastion]
host = %q
user = %q
key_secret = "SPOKE_BAST_SSH_KEY"
known_hosts = %q

# The bastion tier with host_aliases: the bastion opens its channel to
# the alias (it cannot resolve the DNS-dark name either).
[clusters.bdark]
kubeconfig_secret = "SPOKE_DARK_KUBECONFIG"
host_aliases = { %q = "127.0.0.1" }
connect_timeout = "5s"
[clusters.bdark.bastion]
host = %q
user = %q
key_secret = "SPOKE_BAST_SSH_KEY"
known_hosts = %q
`, kube.DarkHost, px.URL, bast.Addr, sshd.User(t), bast.KnownHosts(), kube.DarkHost, bast.Addr, sshd.User(t), bast.KnownHosts())
	b := newJobsBroker(t, hub, token, admin, "spokes", "docker", fleetFile, map[string][]byte{
		"SPOKE_PUB_KUBECONFIG":  pub,
		"SPOKE_DARK_KUBECONFIG": dark,
		"SPOKE_BAST_SSH_KEY":    bast.key,
	})
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{"spokes": api.BrokerOnline})
	})
	ag := startDockerAgent(t, admin, "spokes", "trainer")

	cases := []tierCase{{"pub", "public"}, {"dark", "host_aliases"}, {"prox", "proxy"}, {"bast", "bastion"}, {"bdark", "bastion"}}
	runs := map[string]<-chan cliResult{}
	began := time.Now()
	for _, c := range cases {
		runs[c.cluster] = ag.startJobRun(t, 2*time.Minute, "--cluster", c.cluster, "--image", "busybox",
			"--env", kube.EnvFakeDuration+"=3s", "--", "train.sh", "--tier", c.cluster)
	}
	// The Job's program "prints" its output: its pod's log, written as
	// soon as the Job is on the spoke.
	for _, c := range cases {
		name := spokeJobOfCluster(t, s, ns, ag.id, c.cluster, time.Minute)
		s.SetJobLog(t, ns, name, fmt.Sprintf("loading data for %s\nepoch 1: loss 0.5\n::scion-result:: {\"tier\": %q}\ndone\n", c.cluster, c.cluster))
	}
	ids := map[string]string{}
	for _, c := range cases {
		r := <-runs[c.cluster]
		t.Logf("MEASURED: scion job run --cluster %s (%s) took %v", c.cluster, c.tier, r.took.Round(time.Millisecond))
		if r.code != 0 || compactJSON(r.stdout) != fmt.Sprintf(`{"tier":%q}`, c.cluster) {
			t.Errorf("scion job run --cluster %s: %s; want exit 0 and the result {\"tier\":%q}", c.cluster, r, c.cluster)
		}
		ids[c.cluster] = jobIDOf(r.stderr)
	}
	t.Logf("MEASURED: the five Jobs (one per cluster, 3 s each) done %v after their runs began", time.Since(began).Round(time.Millisecond))
	if t.Failed() {
		t.FailNow()
	}
	for _, c := range cases {
		id := ids[c.cluster]
		j := ag.jobOf(t, id)
		if j.State != api.JobStateSucceeded || j.Cluster != c.cluster || j.Tier != c.tier || j.Namespace != ns ||
			compactJSON(string(j.Result)) != fmt.Sprintf(`{"tier":%q}`, c.cluster) || j.ExitCode == nil || *j.ExitCode != 0 {
			t.Errorf("job %s on %s: %+v; want succeeded on cluster %s, tier %s, namespace %s, with its result and exit code 0", id, c.cluster, j, c.cluster, c.tier, ns)
		}
		cl, tier, state := ledgerRow(t, hub, id)
		if cl != c.cluster || tier != c.tier || state != string(api.JobStateSucceeded) {
			t.Errorf("ledger row of job %s: cluster %q tier %q state %q; want %s, %s, succeeded", id, cl, tier, state, c.cluster, c.tier)
		}
		logs := ag.run(t, cliTimeout, "job", "logs", id)
		if logs.code != 0 || !strings.Contains(logs.stdout, "epoch 1: loss 0.5") {
			t.Errorf("scion job logs %s: %s; want the pod's log", id, logs)
		}
	}

	// Secrecy: whatever the agent can read, and the processes' logs.
	secrets := secretNeedles(tok, s.CAPEM(), bast.key)
	seen := map[string]string{}
	seen["agent env"] = strings.Join(dockerAgentEnv(t, ag.id), "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := client.New(hub.URL, ag.token())
	if a, err := acl.GetAgent(ctx, ag.id, ""); err != nil {
		t.Errorf("the agent reads itself: %v", err)
	} else {
		raw, _ := json.Marshal(a)
		seen["agent show"] = string(raw)
	}
	list := ag.run(t, cliTimeout, "job", "list", "-o", "json")
	seen["job list"] = list.stdout + list.stderr
	for c, id := range ids {
		for _, args := range [][]string{{"job", "show", id, "-o", "json"}, {"job", "logs", id}, {"job", "logs", id, "-o", "json"}} {
			r := ag.run(t, cliTimeout, args...)
			seen[c+": "+strings.Join(args, " ")] = r.stdout + r.stderr
		}
	}
	seen["agent logs"] = admin.mustScion(t, "logs", ag.name)
	seen["hub log"] = hub.proc.Logs()
	seen["broker log"] = b.proc.Logs()
	for where, text := range seen {
		for what, needle := range secrets {
			if strings.Contains(text, needle) {
				t.Errorf("SECRET LEAK: %s holds the %s", where, what)
			}
		}
	}
	t.Logf("secrecy: %d sources checked for %d secret values", len(seen), len(secrets))

	// Rotation, as a hub admin does it with the CLI: the broker reads the
	// secrets at each run. A revoked token is refused by the spoke, a key
	// the bastion does not accept by the bastion: each the typed error of
	// its cluster, at once. The old values back, Jobs run again (the
	// bastion's tunnel is remade for the key it now has).
	setSecret := func(name string, v []byte) {
		t.Helper()
		admin.mustScion(t, "hub", "secret", "set", name, "--broker", "spokes", "--from-file", writeTemp(t, "rotated", v))
	}
	_, otherKey := sshd.NewKey(t)
	setSecret("SPOKE_PUB_KUBECONFIG", s.KubeconfigBytes(s.URL, "revoked-token", ns))
	setSecret("SPOKE_BAST_SSH_KEY", otherKey)
	for _, c := range []tierCase{{"pub", "public"}, {"bast", "bastion"}} {
		r := <-ag.startJobRun(t, time.Minute, "--cluster", c.cluster, "--image", "busybox", "--", "train.sh")
		var e api.JobError
		err := json.Unmarshal([]byte(r.stdout), &e)
		t.Logf("MEASURED: rotated to a bad secret, %s answered in %v: %s", c.cluster, r.took.Round(time.Millisecond), e.Message)
		if err != nil || r.code != 1 || e.Status != "error" || e.Cluster != c.cluster || e.Tier != c.tier || r.took > 15*time.Second {
			t.Errorf("scion job run --cluster %s after its secret was rotated to a bad one: %s; want exit 1 and the typed error of %s (%s), promptly", c.cluster, r, c.cluster, c.tier)
		}
	}
	setSecret("SPOKE_PUB_KUBECONFIG", pub)
	setSecret("SPOKE_BAST_SSH_KEY", bast.key)
	r := <-ag.startJobRun(t, time.Minute, "--cluster", "bast", "--image", "busybox", "--env", kube.EnvFakeDuration+"=1s", "--", "train.sh")
	if r.code != 0 {
		t.Errorf("scion job run --cluster bast with its key restored: %s; want it to run", r)
	}
	// Refusals and rotations logged nothing secret either.
	for what, needle := range secretNeedles(tok, s.CAPEM(), otherKey) {
		for where, text := range map[string]string{"hub log": hub.proc.Logs(), "broker log": b.proc.Logs()} {
			if strings.Contains(text, needle) {
				t.Errorf("SECRET LEAK after the rotations: the %s holds the %s", where, what)
			}
		}
	}
}

// compactJSON is s compacted, or s as it is when it is not JSON.
func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// secretNeedles are the strings no output may hold: the kubeconfig's
// token, the CA (as the kubeconfig embeds it, and its PEM body) and the
// SSH private key's body lines.
func secretNeedles(token string, caPEM, key []byte) map[string]string {
	n := map[string]string{
		"kubeconfig token":           token,
		"certificate-authority-data": base64.StdEncoding.EncodeToString(caPEM),
	}
	for i, l := range pemBody(caPEM) {
		n[fmt.Sprintf("CA PEM line %d", i)] = l
	}
	for i, l := range pemBody(key) {
		n[fmt.Sprintf("SSH private key line %d", i)] = l
	}
	return n
}

// pemBody is a PEM block's base64 lines, those long enough to mean
// something (the last line may be short).
func pemBody(p []byte) []string {
	var out []string
	for _, l := range strings.Split(string(p), "\n") {
		if len(l) >= 40 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}
