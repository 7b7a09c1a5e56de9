package kube

import (
	"context"
	"net/url"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/internal/testenv/proxy"
	"github.com/scion-go/scion/spoke/fleet"
)

// The bootstrap kubeconfig is one the broker accepts (self-contained, a
// long-lived token: no warning) and works on the public, DNS-dark and
// proxy tiers, the last through a real tinyproxy.
func TestBootstrapKubeconfigOnFleetTiers(t *testing.T) {
	s := NeedSpoke(t)
	ns := "tiers-" + s.prefix
	token := s.BootstrapToken(t, ns)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	p := proxy.Start(t, port)
	for _, tc := range []struct {
		name   string
		server string
		c      fleet.Cluster
	}{
		{"public", s.URL, fleet.Cluster{}},
		{"dns-dark", s.DarkURL(), fleet.Cluster{HostAliases: map[string]string{DarkHost: "127.0.0.1"}}},
		{"proxy", s.URL, fleet.Cluster{ProxyURL: p.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Name, tc.c.KubeconfigSecret = "spoke", "SPOKE_KUBECONFIG"
			cfg, warnings, err := fleet.RESTConfig(&tc.c, s.KubeconfigBytes(tc.server, token, ns), fleet.Options{})
			if err != nil || len(warnings) != 0 {
				t.Fatalf("RESTConfig: %v, warnings %q", err, warnings)
			}
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{}); err != nil {
				t.Fatalf("jobs list: %v", err)
			}
		})
	}
}
