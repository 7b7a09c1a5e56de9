package launch

import (
	"net/http"
	"os"
	"path/filepath"

	"github.com/scion-go/scion/client/hubtls"
	"github.com/scion-go/scion/client/idtoken"
	"github.com/scion-go/scion/config"
)

// brokerCAFix is what a broker's log says to do about a Hub certificate
// it does not trust.
const brokerCAFix = "register this broker again with the CA that signed it: " +
	"'scion runtime-broker register --force --ca <file>' (or set caFile for this connection in broker-credentials.yaml)"

// hubHTTPClient is the HTTP client of a broker's requests to its Hub (the
// control channel's upgrade, at every reconnect, and its secret fetches):
// the connection's trust (caFile; plain http to a Hub that is not on
// loopback is refused unless insecureHTTP), its transport auth
// (transportMode and transportAudience, under SCION_TRANSPORT_MODE and
// SCION_TRANSPORT_AUDIENCE) with an ID token on each request, and errors
// that name the fix when the Hub's certificate is not trusted.
func hubHTTPClient(conn *config.BrokerConnection, hubURL string) (*http.Client, error) {
	if err := hubtls.CheckScheme(hubURL, conn.InsecureHTTP,
		"insecureHTTP: true on this connection in broker-credentials.yaml (what 'scion runtime-broker register --insecure-http' saves)"); err != nil {
		return nil, err
	}
	var rt http.RoundTripper
	tr, err := hubtls.Transport(hubtls.Settings{CAFile: conn.CAFile})
	if err != nil {
		return nil, err
	}
	if tr != nil {
		rt = tr
	}
	a, err := idtoken.New(idtoken.Settings{Mode: conn.TransportMode, Audience: conn.TransportAudience}, hubURL, os.Getenv)
	if err != nil {
		return nil, err
	}
	if a != nil {
		rt = &idtoken.Transport{Base: rt, Auth: a}
	}
	return &http.Client{Transport: hubtls.Explaining(rt, hubURL, brokerCAFix)}, nil
}

// agentHubCA is the file a broker hands its agents as the Hub's CA: the
// certificates of the connection's caFile alone, written under the
// broker's data directory (dataDir/hub-ca.pem, through a rename), never
// the caFile itself, which may be a bundle that also holds a private
// key. "" when the connection has no caFile.
func agentHubCA(conn *config.BrokerConnection, dataDir string) (string, error) {
	if conn.CAFile == "" {
		return "", nil
	}
	b, err := hubtls.CertificatesPEM(conn.CAFile)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, "hub-ca.pem")
	tmp, err := os.CreateTemp(dataDir, ".hub-ca-*.pem")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	// 0644: agents run as other users and read it through a mount.
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}
