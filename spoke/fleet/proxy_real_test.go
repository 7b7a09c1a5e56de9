package fleet

import (
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
	if log := p.Log(); !strings.Contains(log, "CONNECT") || !strings.Contains(log, strconv.Itoa(apiPort)) {
		t.Errorf("tinyproxy's log does not show the CONNECT to the API server:\n%s", log)
	}
}
