package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	scion "github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv/iapproxy"
	"github.com/scion-go/scion/internal/testenv/oidcprovider"
	"github.com/scion-go/scion/internal/wait"
)

// TestBrokersBehindIAP: a team Hub behind an identity-aware proxy that
// refuses every request (the WebSocket upgrade included) without a
// service account's ID token for its audience, as Google IAP does.
// Brokers on three machines, one per token source (a key file, a
// metadata server, a token file), register through it and keep their
// control channel through it; the admin CLI's calls carry the token from
// the stored connection. Tokens live 20 s: the channel cut after the
// first one expired comes back with a fresh one, and no request ever
// reaches the proxy with an expired token. A broker without transport
// settings, and one with another audience, are refused by the proxy with
// a message that says so.
func TestBrokersBehindIAP(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	const aud = "1234-iap.apps.example"
	idp := oidcprovider.New(t, oidcprovider.Options{})
	idp.SetServiceAccountTokenLife(20 * time.Second)
	hub := startTeamHub(t, newHost(t, "hub"), hbFlags...)
	token := hub.adminToken(t)
	iap := iapproxy.New(t, hub.URL, aud, idp.VerifyServiceAccountToken)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")
	cl := scion.New(hub.URL, token)

	iapBroker := func(name string, extra ...string) *brokerHost {
		b := &brokerHost{host: newHost(t, name), brokerName: name}
		b.extra = extra
		b.mustScion(t, "hub", "add", "h", iap.URL, "--use", "--token", token)
		return b
	}

	// A key file's machine: refused without transport settings, and with
	// the wrong audience, before anything reaches the Hub.
	keyFile := idp.ServiceAccountKeyFile(t, "broker-1@sa.example")
	b1 := iapBroker("iap-key", "GOOGLE_APPLICATION_CREDENTIALS="+keyFile)
	_, stderr, err := b1.scion("runtime-broker", "register", "--name", b1.brokerName)
	if err == nil || !strings.Contains(stderr, "HTTP 401") || !strings.Contains(stderr, "not the Hub's answer") {
		t.Fatalf("register through IAP without transport settings: %v\n%s", err, stderr)
	}
	_, stderr, err = b1.scion("runtime-broker", "register", "--name", b1.brokerName, "--transport-mode", "iap", "--transport-audience", "another-client")
	if err == nil || !strings.Contains(stderr, "HTTP 401") {
		t.Fatalf("register with another audience: %v\n%s", err, stderr)
	}
	if r := iap.Refused(); len(r) != 2 || r[0] != "no Proxy-Authorization" || !strings.Contains(r[1], `audience "another-client"`) {
		t.Fatalf("the proxy's refusals: %q", r)
	}
	if bs, err := b1.brokers(); err == nil && len(bs) > 0 {
		t.Fatalf("a refused registration reached the Hub: %v", bs)
	}
	_, stderr, err = b1.scion("runtime-broker", "register", "--name", b1.brokerName, "--transport-mode", "basic")
	if err == nil || !strings.Contains(stderr, `transport mode "basic" is not one of iap, cloudrun_invoker`) {
		t.Fatalf("an unknown mode: %v\n%s", err, stderr)
	}

	var reg registration
	b1.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", b1.brokerName, "--transport-mode", "iap", "--transport-audience", aud)
	b1.brokerID = reg.BrokerID
	creds, err := os.ReadFile(filepath.Join(b1.home, "broker-credentials.yaml"))
	if err != nil || !strings.Contains(string(creds), "transportMode: iap") || !strings.Contains(string(creds), "transportAudience: "+aud) {
		t.Fatalf("the saved connection: %v\n%s", err, creds)
	}
	// Admin calls of the CLI: the stored connection's settings.
	b1.mustScion(t, "runtime-broker", "provide", "--project", "default")
	if out := b1.mustScion(t, "runtime-broker", "status"); !strings.Contains(out, "iap (audience "+aud+")") {
		t.Errorf("status does not show the transport auth:\n%s", out)
	}
	started := time.Now()
	b1.proc = b1.start(t, "broker-"+b1.brokerName, append([]string{"runtime-broker", "start", "--runtime", "fake"}, hbFlags...)...)
	waitBrokerOnline(t, cl, b1.brokerName)

	// The metadata server's machine, told by the environment alone (it
	// overrides the credentials file, which holds no transport fields).
	b2 := iapBroker("iap-metadata", "GCE_METADATA_HOST="+idp.MetadataServer(t, "broker-2@sa.example"),
		"SCION_TRANSPORT_MODE=iap", "SCION_TRANSPORT_AUDIENCE="+aud)
	b2.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", b2.brokerName)
	b2.mustScion(t, "runtime-broker", "provide", "--project", "default")
	b2.proc = b2.start(t, "broker-"+b2.brokerName, append([]string{"runtime-broker", "start", "--runtime", "fake"}, hbFlags...)...)

	// A projected token file's machine (a token minted for the audience,
	// living an hour as a kubelet's would).
	idp.SetServiceAccountTokenLife(time.Hour)
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(idp.ServiceAccountToken(t, "broker-3@sa.example", aud)), 0o600); err != nil {
		t.Fatal(err)
	}
	idp.SetServiceAccountTokenLife(20 * time.Second)
	b3 := iapBroker("iap-file", "SCION_TRANSPORT_TOKEN_FILE="+tokFile)
	b3.mustScionJSON(t, &reg, "runtime-broker", "register", "--name", b3.brokerName, "--transport-mode", "iap", "--transport-audience", aud)
	b3.mustScion(t, "runtime-broker", "provide", "--project", "default")
	b3.proc = b3.start(t, "broker-"+b3.brokerName, append([]string{"runtime-broker", "start", "--runtime", "fake"}, hbFlags...)...)
	waitBrokerOnline(t, cl, b2.brokerName)
	waitBrokerOnline(t, cl, b3.brokerName)
	for who, n := range map[string]int{"broker-1@sa.example": 1, "broker-2@sa.example": 1, "broker-3@sa.example": 1} {
		if got := iap.Accepted(who); got < n {
			t.Errorf("%s got %d requests through the proxy", who, got)
		}
	}

	// Agents on each, through the channel behind the proxy, in the global
	// project (default): a broker that serves one Hub runs them.
	for _, b := range []*brokerHost{b1, b2, b3} {
		var a api.Agent
		if err := admin.scionJSONCmd(&a, "start", "on-"+b.brokerName, "--broker", b.brokerName, "--", "sleep", "1000"); err != nil {
			t.Fatalf("start on %s: %v", b.brokerName, err)
		}
		if a.Phase != api.PhaseRunning {
			t.Fatalf("agent on %s: phase %s (%s)", b.brokerName, a.Phase, a.StatusMessage)
		}
	}

	// Past the first token's life, the channel is cut: the reconnect
	// carries a fresh token (the proxy refuses an expired one).
	if d := 21*time.Second - time.Since(started); d > 0 {
		time.Sleep(d)
	}
	minted := idp.ServiceAccountTokens()
	refusedBefore := len(iap.Refused())
	iap.Cut()
	time.Sleep(time.Second)
	iap.Restore()
	waitBrokerOnline(t, cl, b1.brokerName)
	wait.Eventually(t, offlineBudget, pollInterval, func() error {
		return admin.brokerStatuses(map[string]string{b1.brokerName: api.BrokerOnline, b2.brokerName: api.BrokerOnline, b3.brokerName: api.BrokerOnline})
	})
	if idp.ServiceAccountTokens() <= minted {
		t.Errorf("no token minted after the first expired (%d before the cut, %d after)", minted, idp.ServiceAccountTokens())
	}
	for _, why := range iap.Refused()[refusedBefore:] {
		t.Errorf("a broker's request refused by the proxy: %s", why)
	}
	var a api.Agent
	if err := admin.scionJSONCmd(&a, "stop", "on-"+b1.brokerName); err != nil || a.Phase != api.PhaseStopped {
		t.Fatalf("stop through the reconnected channel: %+v, %v", a.Phase, err)
	}
	iapSoak(t, idp, iap, b1, cl, []string{b1.brokerName, b2.brokerName, b3.brokerName})
}

// iapSoak: tokens that expire every life (6 s; SCION_IAP_SOAK=10m makes
// it 60 s for 10 minutes, the figure of the issue) for ten lifetimes,
// with the proxy cutting every connection once per life and a user's
// CLI calling the Hub through the proxy every second: the brokers' channels
// come back each time, no request reaches the proxy with an expired
// token, and no 401 reaches the user.
func iapSoak(t *testing.T, idp *oidcprovider.Provider, iap *iapproxy.Proxy, user *brokerHost, cl *scion.Client, brokers []string) {
	life, soak := 6*time.Second, time.Minute
	if s := os.Getenv("SCION_IAP_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Minute {
			t.Fatalf("SCION_IAP_SOAK=%q: want a duration of at least 1m", s)
		}
		life, soak = d/10, d
	}
	idp.SetServiceAccountTokenLife(life)
	refused := len(iap.Refused())
	minted := idp.ServiceAccountTokens()
	end := time.Now().Add(soak)
	nextCut := time.Now().Add(life)
	calls, cutErrs := 0, 0
	for time.Now().Before(end) {
		if time.Now().After(nextCut) {
			iap.Cut()
			time.Sleep(200 * time.Millisecond)
			iap.Restore()
			nextCut = time.Now().Add(life)
		}
		_, stderr, err := user.scion("runtime-broker", "status")
		calls++
		if err != nil {
			if strings.Contains(stderr, "401") || strings.Contains(stderr, "not the Hub's answer") {
				t.Fatalf("a 401 reached the user after %d calls: %s", calls, stderr)
			}
			cutErrs++ // a call the cut closed under it
		}
		time.Sleep(time.Second)
	}
	for _, name := range brokers {
		waitBrokerOnline(t, cl, name)
	}
	for _, why := range iap.Refused()[refused:] {
		t.Errorf("refused by the proxy during the soak: %s", why)
	}
	if n := idp.ServiceAccountTokens() - minted; n < 10 {
		t.Errorf("%d tokens minted in ten lifetimes", n)
	}
	if cutErrs > calls/4 {
		t.Errorf("%d of %d user calls failed", cutErrs, calls)
	}
	t.Logf("MEASURED: %v of %v tokens, cut once per life: %d user calls (%d closed by a cut, none refused), %d tokens minted, brokers online",
		soak, life, calls, cutErrs, idp.ServiceAccountTokens()-minted)
}
