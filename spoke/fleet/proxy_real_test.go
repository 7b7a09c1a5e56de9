package fleet

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/internal/testenv/proxy"
)

// The proxy tier through a real HTTP CONNECT proxy (Debian's tinyproxy,
// internal/testenv/proxy) that allows CONNECT to the API server's port
// only: client-go's requests reach the spoke, TLS checked end to end.
func TestProxyTierRealTinyproxy(t *testing.T) {
	kc := kube.Need(t)
	apiPort, err := strconv.Atoi(port(t, kc))
	if err != nil {
		t.Fatal(err)
	}
	p := proxy.Start(t, apiPort)
	c := &Cluster{Name: "pok", KubeconfigSecret: "P", ProxyURL: p.URL}
	kcb := kubeconfigFor(kc.URL, kc.CAPEM(), "scion-broker-token", "")
	if err := version(t, c, kcb, Options{ConnectTimeout: 5 * time.Second}); err != nil {
		t.Fatalf("through tinyproxy: %v\n%s", err, p.Log())
	}
	// HTTP/1.1 through a proxy (HTTP/2 through tinyproxy waits on Nagle:
	// ~40 ms a request); public stays HTTP/2.
	for _, tc := range []struct {
		c     *Cluster
		major int
	}{{c, 1}, {&Cluster{Name: "pub", KubeconfigSecret: "P"}, 2}} {
		cfg, _, err := RESTConfig(tc.c, kcb, Options{ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, kc.URL+"/version", nil)
		req.Header.Set("Authorization", "Bearer scion-broker-token")
		resp, err := cfg.Transport.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.c.Name, err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != tc.major {
			t.Errorf("%s tier: %s, want HTTP/%d", tc.c.Tier(), resp.Proto, tc.major)
		}
	}
	if log := p.Log(); !strings.Contains(log, "CONNECT") || !strings.Contains(log, strconv.Itoa(apiPort)) {
		t.Errorf("tinyproxy's log does not show the CONNECT to the API server:\n%s", log)
	}
}
