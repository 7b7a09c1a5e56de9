package cli

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `scion check` with credentials in every URL a broker host's files can
// hold (the fleet file's proxy_url and bastion host, a profile block's
// proxy_url, the kubeconfig's server and proxy-url): the password and the
// user appear neither in its output nor in its errors, whether the check
// stops at the files or a probe fails on them.
func TestCheckPrintsNoURLUserinfo(t *testing.T) {
	home := setHome(t)
	const secret, user = "hunter2", "tokenuser"
	cred := user + ":" + secret + "@"
	write := func(name, body string) string {
		p := filepath.Join(home, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	kubeconfig := func(server, proxy string) string {
		p := ""
		if proxy != "" {
			p = "\n    proxy-url: " + proxy
		}
		return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: %s\n    certificate-authority-data: %s%s\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: s\n  context: {cluster: s, user: u}\ncurrent-context: s\n",
			server, base64.StdEncoding.EncodeToString([]byte("not a CA")), p)
	}
	noSecret := func(t *testing.T, r result, want string) {
		t.Helper()
		all := r.out + r.err
		if strings.Contains(all, secret) || strings.Contains(all, user) {
			t.Errorf("the URL's userinfo is printed:\n%s", all)
		}
		if !strings.Contains(all, want) {
			t.Errorf("%q not in:\n%s", want, all)
		}
		if r.code == 0 {
			t.Errorf("exit 0:\n%s", all)
		}
	}
	settings := "server:\n  broker:\n    runtime: docker\n"

	for _, tc := range []struct{ name, settings, fleet, want string }{
		{"fleet proxy_url", settings, "[clusters.x]\nkubeconfig_secret = \"K\"\nproxy_url = \"ftp://" + cred + "p:3128\"\n", `"ftp://***@p:3128" is not an http:// or https:// proxy URL`},
		{"fleet proxy_url without scheme", settings, "[clusters.x]\nkubeconfig_secret = \"K\"\nproxy_url = \"" + cred + "p:3128\"\n", `"***@p:3128"`},
		{"bastion host", settings, "[clusters.x]\nkubeconfig_secret = \"K\"\n[clusters.x.bastion]\nhost = \"" + cred + "b\"\nuser = \"u\"\nkey_secret = \"KEY\"\nknown_hosts = \"b ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\"\n", "clusters.x.bastion.host"},
		{"profile proxy_url", settings + "    profiles:\n      - name: gpu\n        clusters:\n          x: {kubeconfig_secret: K, proxy_url: \"ftp://" + cred + "p:3128\"}\n", "", `"ftp://***@p:3128"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write("settings.yaml", tc.settings)
			write("clusters.toml", tc.fleet)
			noSecret(t, runCheck(t, "check"), "error:")
		})
	}

	// The files load; the probes meet the kubeconfig's URLs.
	write("settings.yaml", settings)
	write("clusters.toml", "[clusters.x]\nkubeconfig_secret = \"K\"\n[clusters.y]\nkubeconfig_secret = \"Y\"\nproxy_url = \"http://"+cred+closed+"\"\n")
	for _, tc := range []struct{ name, kubeconfig, want string }{
		{"kubeconfig proxy-url", kubeconfig("https://api.x:6443", "ftp://"+cred+"p:3128"), `proxy-url "ftp://***@p:3128"`},
		{"kubeconfig proxy-url without scheme", kubeconfig("https://api.x:6443", cred+"p:3128"), `proxy-url "***@p:3128"`},
		{"kubeconfig server", kubeconfig("https://"+cred+closed, ""), "kubeconfig"},
		{"kubeconfig plain server", kubeconfig("http://"+cred+closed, ""), "not an https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := write("k.kubeconfig", tc.kubeconfig)
			r := runCheck(t, "check", "--cluster", "x", "--timeout", "2s", "--kubeconfig-secret-file", "K="+kc)
			noSecret(t, r, tc.want)
		})
	}
	t.Run("an unreachable proxy with credentials", func(t *testing.T) {
		kc := write("y.kubeconfig", kubeconfig("https://api.y:6443", ""))
		r := runCheck(t, "check", "--cluster", "y", "--timeout", "2s", "--kubeconfig-secret-file", "Y="+kc, "-o", "json")
		noSecret(t, r, `"probe": "`)
	})
}
