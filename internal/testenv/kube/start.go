package kube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// start writes the certificates, keys and token file, then runs etcd and
// the API server on free loopback ports and waits for /readyz.
func (c *Cluster) start(ctx context.Context, apiBin, etcdBin string) error {
	if err := c.writeCredentials(); err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	c.etcd, err = run(filepath.Join(c.dir, "etcd.log"), etcdBin,
		"--name", "scion-test",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", etcdClient, "--advertise-client-urls", etcdClient,
		"--listen-peer-urls", etcdPeer, "--initial-advertise-peer-urls", etcdPeer,
		"--initial-cluster", "scion-test="+etcdPeer,
		// Test data need not survive a power cut: skip fsync's latency.
		"--unsafe-no-fsync",
		"--log-level", "warn")
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	c.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	f := func(name string) string { return filepath.Join(c.dir, name) }
	args := []string{"--etcd-servers", etcdClient,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]),
		"--tls-cert-file", f("serving.crt"), "--tls-private-key-file", f("serving.key"),
		"--client-ca-file", f("ca.crt"),
		"--token-auth-file", f("tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", f("sa.pub"),
		"--service-account-signing-key-file", f("sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--cert-dir", f("certs"),
		// The kubernetes Service's endpoint would be the advertise
		// address, which may not be loopback; nothing here needs it.
		"--endpoint-reconciler-type", "none",
		// There are no kubelets to reach; a bad kubelet address must not
		// be dialled on our behalf beyond loopback.
		"--kubelet-preferred-address-types", "InternalIP",
		"--v", "1"}
	c.api, err = run(f("kube-apiserver.log"), apiBin, append(args, c.apiArgs...)...)
	if err != nil {
		return fmt.Errorf("start kube-apiserver: %w", err)
	}
	c.Admin = c.ConfigFor(adminToken)
	if c.Client, err = kubernetes.NewForConfig(c.Admin); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// waitReady polls /readyz until it says ok, a process dies, or ctx ends
// (with the tail of the logs in the error).
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rc := c.Client.Discovery().RESTClient()
	var last error
	for {
		body, err := rc.Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && bytes.Equal(bytes.TrimSpace(body), []byte("ok")) {
			return nil
		}
		last = err
		if last == nil {
			last = errNotReady
		}
		for _, p := range []*process{c.etcd, c.api} {
			if p.exited() {
				return fmt.Errorf("%s exited before the API server was ready:\n%s", filepath.Base(p.cmd.Path), p.tail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready (%v):\n%s", last, c.api.tail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// DarkHost is a name on the serving certificate that resolves nowhere
// (.invalid, RFC 6761): the DNS-dark spoke tier reaches the API server by
// it through a host alias, with the certificate still checked against it.
const DarkHost = "spoke-api.scion.invalid"

// writeCredentials makes a CA with a serving certificate for 127.0.0.1,
// localhost and DarkHost, a service-account signing key, and the static
// token file.
func (c *Cluster) writeCredentials() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scion-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:    []string{"localhost", "kubernetes.default.svc", DarkHost},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	c.caPEM = pemBlock("CERTIFICATE", caDER)
	files := map[string][]byte{
		"ca.crt":      c.caPEM,
		"serving.crt": pemBlock("CERTIFICATE", srvDER),
		"serving.key": ecKeyPEM(srvKey),
		"sa.key":      ecKeyPEM(saKey),
		"tokens.csv":  tokenFile(),
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files["sa.pub"] = pemBlock("PUBLIC KEY", pub)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(c.dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tokenFile is the --token-auth-file: token,user,uid,"groups".
func tokenFile() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s,scion-admin,uid-admin,\"system:masters\"\n", adminToken)
	for _, u := range StaticUsers {
		fmt.Fprintf(&b, "%s,%s,uid-%s\n", u.Token, u.Name, u.Name)
	}
	return b.Bytes()
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // a freshly generated P-256 key always marshals
	}
	return pemBlock("EC PRIVATE KEY", der)
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is a child whose output goes to a log file. It is put in its own
// process group and killed with it, and dies with the test binary
// (Pdeathsig), so that a crashed test leaves no server behind.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	once sync.Once
}

func run(logPath, bin string, args ...string) (*process, error) {
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	p := &process{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks politely, then kills the group after five seconds.
func (p *process) stop() {
	p.once.Do(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// tail is the end of the process's log, for error messages.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
