package kube

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The names docs/spoke-bootstrap.yaml uses.
const (
	BootstrapFile = "docs/spoke-bootstrap.yaml" // from the module root
	// BootstrapNamespace is the file's namespace; BootstrapSpoke replaces
	// every occurrence of it.
	BootstrapNamespace      = "scion-jobs"
	BootstrapServiceAccount = "scion-broker"
	BootstrapTokenSecret    = "scion-broker-token"
)

// BootstrapSpoke does what a spoke admin does (docs/spokes.md): applies
// docs/spoke-bootstrap.yaml with its namespace replaced by namespace
// (created when missing), waits for the token controller to fill the
// Secret, and returns a self-contained kubeconfig for the ServiceAccount
// (CA and token embedded, server URL, namespace set).
func (s *Spoke) BootstrapSpoke(t testing.TB, namespace string) []byte {
	t.Helper()
	return s.KubeconfigBytes(s.URL, s.BootstrapToken(t, namespace), namespace)
}

// BootstrapToken applies the bootstrap file as BootstrapSpoke does and
// returns the ServiceAccount's long-lived token.
func (s *Spoke) BootstrapToken(t testing.TB, namespace string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), BootstrapFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.ApplyYAML(ctx, bytes.ReplaceAll(raw, []byte(BootstrapNamespace), []byte(namespace))); err != nil {
		t.Fatalf("apply %s: %v", BootstrapFile, err)
	}
	// The file's RoleBinding decides the broker's first request: wait
	// until the API server's authorizer has it.
	if err := BindingsGranted(ctx, s.Client, namespace); err != nil {
		t.Fatal(err)
	}
	var token []byte
	err = poll(ctx, func() (bool, error) {
		sec, err := s.Client.CoreV1().Secrets(namespace).Get(ctx, BootstrapTokenSecret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		token = sec.Data["token"]
		return len(token) > 0, nil
	}, func() string {
		return "token Secret " + namespace + "/" + BootstrapTokenSecret + " not filled:\n" + s.kcm.tail()
	})
	if err != nil {
		t.Fatal(err)
	}
	// Pods of a fresh namespace need its default ServiceAccount.
	if err := s.waitServiceAccount(ctx, namespace, "default"); err != nil {
		t.Fatal(err)
	}
	return string(token)
}

// KubeconfigBytes is a self-contained kubeconfig (what the Hub secret
// holds): server, the CA embedded, token and namespace, nothing that
// names a file or a program.
func (c *Cluster) KubeconfigBytes(server, token, namespace string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: spoke\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n",
		server, base64.StdEncoding.EncodeToString(c.caPEM))
	fmt.Fprintf(&b, "users:\n- name: scion-broker\n  user:\n    token: %s\n", token)
	fmt.Fprintf(&b, "contexts:\n- name: spoke\n  context:\n    cluster: spoke\n    user: scion-broker\n    namespace: %s\ncurrent-context: spoke\n", namespace)
	return []byte(b.String())
}

// AdminKubeconfig is a self-contained kubeconfig of a member of
// system:masters (the spoke admin), namespace default.
func (c *Cluster) AdminKubeconfig() []byte {
	return c.KubeconfigBytes(c.URL, adminToken, "default")
}

// DarkURL is the API server's URL by DarkHost, a name no resolver
// knows: for the DNS-dark tier, with host_aliases mapping DarkHost to
// 127.0.0.1 (the serving certificate carries the name).
func (c *Cluster) DarkURL() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		panic(err) // c.URL is ours
	}
	return "https://" + DarkHost + ":" + u.Port()
}

// moduleRoot is the main module's directory, found upwards from the
// test's working directory (its package directory).
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/scion-go/scion\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("module root of github.com/scion-go/scion not found above the working directory")
		}
		dir = parent
	}
}
