package probe

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	testsshd "github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/spoke/check"
	"github.com/scion-go/scion/spoke/fleet"
)

// The bastion tier through Debian's sshd: the spoke probes pass over the
// tunnel (the kubeconfig names a host that resolves nowhere, the bastion
// dials its alias); a bastion whose host key is not the pinned one, and
// one nobody answers for, fail reachability naming the tier, in time.
func TestSpokeBastionTier(t *testing.T) {
	kc := kube.Need(t)
	key, keyPEM := testsshd.NewKey(t)
	srv := testsshd.Start(t, key.PublicKey())
	ns := kc.Namespace(t)
	grant(t, kc.Client, ns, "scion-jobs", rulesFor(check.SpokeNeedsFor("")), user("scion-broker"))
	u, err := url.Parse(kc.URL)
	if err != nil {
		t.Fatal(err)
	}
	server := "https://" + net.JoinHostPort(kube.DarkHost, u.Port())
	sec := secretsOf(map[string]string{"B200_KC": spokeKubeconfig(server, kc.CAPEM(), "scion-broker-token", ns), "B200_KEY": string(keyPEM)})
	block := func(addr, knownHosts string) *fleet.Cluster {
		c := &fleet.Cluster{Name: "b200", KubeconfigSecret: "B200_KC", HostAliases: map[string]string{kube.DarkHost: "127.0.0.1"},
			Bastion: &fleet.Bastion{Host: addr, User: testsshd.User(t), KeySecret: "B200_KEY", KnownHosts: knownHosts}}
		if err := c.Validate("test"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	const ct = 2 * time.Second
	o := fleet.Options{ConnectTimeout: ct, RequestTimeout: ct}

	rs := Spoke(context.Background(), open(t, o), block(srv.Addr, srv.KnownHosts()), "", sec)
	allPassed(t, rs)
	wantStatus(t, rs, check.ProbeReach, api.CheckPassed, "bastion tier")

	other, _ := testsshd.NewKey(t)
	rs = Spoke(context.Background(), open(t, o), block(srv.Addr, testsshd.KnownHostsLine(srv.Addr, other.PublicKey())), "", sec)
	wantStatus(t, rs, check.ProbeReach, api.CheckFailed, "spoke b200 (bastion tier) unreachable", "host key mismatch", "known_hosts")

	dead := closedPort(t)
	start := time.Now()
	rs = Spoke(context.Background(), open(t, o), block(dead, testsshd.KnownHostsLine(dead, key.PublicKey())), "", sec)
	took := time.Since(start)
	wantStatus(t, rs, check.ProbeReach, api.CheckFailed, "spoke b200 (bastion tier) unreachable")
	if took > ct+time.Second {
		t.Errorf("a dead bastion answered in %v, connect timeout %v", took, ct)
	}
	t.Logf("dead bastion: failed in %v", took.Round(time.Millisecond))
}
