package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// start brings up the parts a Spoke adds to its Cluster, in the order
// they depend on each other: CRDs (kwok watches Logs from its start), the
// node, the controller manager, kwok, the binder.
func (s *Spoke) start(ctx context.Context, bins SpokeBinaries) error {
	var err error
	if s.Dynamic, err = dynamic.NewForConfig(s.Admin); err != nil {
		return err
	}
	if err := os.MkdirAll(s.LogDir, 0o700); err != nil {
		return err
	}
	f := func(name string) string { return filepath.Join(s.dir, name) }
	kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: fixture\n  cluster:\n    server: %s\n    certificate-authority: %s\nusers:\n- name: admin\n  user:\n    token: %s\ncontexts:\n- name: admin\n  context: {cluster: fixture, user: admin}\ncurrent-context: admin\n",
		s.URL, f("ca.crt"), adminToken)
	if err := os.WriteFile(f("admin.kubeconfig"), []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	for _, dir := range []string{bins.KwokCRDs, bins.KueueCRDs} {
		if err := s.ApplyCRDs(ctx, dir); err != nil {
			return err
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        FakeNode,
		Labels:      map[string]string{"kubernetes.io/hostname": FakeNode, "type": "kwok"},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}
	if _, err := s.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", FakeNode, err)
	}

	s.kcm, err = run(f("kube-controller-manager.log"), bins.ControllerManager,
		"--kubeconfig", f("admin.kubeconfig"),
		"--controllers", "job-controller,ttl-after-finished-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller",
		// The token controller signs the Secret-based tokens with the
		// key the API server verifies (sa.pub) and puts the CA beside them.
		"--service-account-private-key-file", f("sa.key"),
		"--root-ca-file", f("ca.crt"),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No metrics or health endpoint: nothing scrapes it, and no port
		// is taken.
		"--secure-port", "0",
		"--concurrent-job-syncs", "2",
		// The default 20 queries a second throttles the informers' start
		// and every controller behind them by seconds.
		"--kube-api-qps", "200", "--kube-api-burst", "400",
		"--v", "1")
	if err != nil {
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}

	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f("kwok.yaml"), stagesConfig(s.Options), 0o600); err != nil {
		return err
	}
	s.kwok, err = run(f("kwok.log"), bins.Kwok,
		"--kubeconfig", f("admin.kubeconfig"),
		"--config", f("kwok.yaml"),
		"--manage-single-node", FakeNode,
		// The API server reaches the "kubelet" (pods/log) at the node's
		// InternalIP and kubelet port: kwok's own server, on loopback.
		"--node-ip", "127.0.0.1",
		"--node-port", strconv.Itoa(ports[0]),
		"--server-address", "127.0.0.1:"+strconv.Itoa(ports[0]),
		"--enable-crds", "Logs",
		"--cidr", "10.244.0.0/16",
		"--node-lease-duration-seconds", "0")
	if err != nil {
		return fmt.Errorf("start kwok: %w", err)
	}

	bctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.bind(bctx)
	}()

	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	if err := s.waitNodeReady(wctx); err != nil {
		return err
	}
	return s.waitServiceAccount(wctx, "default", "default")
}
