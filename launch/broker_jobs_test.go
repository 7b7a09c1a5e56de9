package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scion-go/scion/config"
)

// TestLoadFleet: clusters.toml beside settings.yaml, or --clusters; a
// missing default file is an empty fleet, a missing --clusters an error,
// and a bad file's error names the file, the cluster and the field.
func TestLoadFleet(t *testing.T) {
	home := setHome(t)
	f, err := loadFleet("")
	if err != nil || len(f.Clusters) != 0 {
		t.Fatalf("no file: %v, %v", f, err)
	}
	if _, err := loadFleet(filepath.Join(home, "nope.toml")); err == nil {
		t.Fatal("a --clusters that points nowhere was accepted")
	}
	if err := os.WriteFile(filepath.Join(home, "clusters.toml"), []byte("[clusters.gpu]\nkubeconfig_secret = \"GPU_KC\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := loadFleet(""); err != nil || f.Clusters["gpu"] == nil {
		t.Fatalf("beside settings.yaml: %v, %v", f, err)
	}
	bad := filepath.Join(home, "bad.toml")
	if err := os.WriteFile(bad, []byte("[clusters.gpu]\nkubeconfig_secret = \"1bad\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = loadFleet(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "clusters.gpu.kubeconfig_secret") {
		t.Fatalf("bad file: %v", err)
	}
}

// TestBrokerStartRefusesBadFleet: `runtime-broker start --clusters` with
// a bad file fails before anything is built, naming the field.
func TestBrokerStartRefusesBadFleet(t *testing.T) {
	home := setHome(t)
	if err := os.WriteFile(filepath.Join(home, "settings.yaml"), []byte("server:\n  broker:\n    hub_endpoint: http://127.0.0.1:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(home, "bad.toml")
	if err := os.WriteFile(bad, []byte("[clusters.gpu]\nkubeconfig_secret = \"K\"\nproxy_url = \"ftp://x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Broker(context.Background(), config.BrokerOptions{Runtime: "fake", Clusters: bad})
	if err == nil || !strings.Contains(err.Error(), "clusters.gpu.proxy_url") {
		t.Fatalf("err %v", err)
	}
}
