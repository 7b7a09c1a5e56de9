package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// Versions of the spoke fixture's other parts; .ci/kube-apiserver.sh
// builds and caches them (TestSpokeVersionsMatchScript keeps the two in
// step).
const (
	KwokVersion  = "v0.8.0"
	KueueVersion = "v0.17.0"
)

// FakeNode is the one node kwok manages in a Spoke.
const FakeNode = "scion-fake-node"

// The container environment variables a Spoke's fake kubelet obeys (read
// from the pod's first container; a Job's template env reaches its pods):
const (
	// EnvFakeExit is the exit code every container ends with: unset or
	// "0", the pod Succeeds; any other integer, it Fails with that code
	// (reason "Error").
	EnvFakeExit = "SCION_FAKE_EXIT"
	// EnvFakeDuration is how long the pod runs before it ends, as a Go
	// duration ("30s", "1h"); unset, SpokeOptions.RunFor.
	EnvFakeDuration = "SCION_FAKE_DURATION"
)

// SpokeOptions tune StartSpoke; zero values take the defaults.
type SpokeOptions struct {
	// StartAfter is how long a bound pod stays Pending before it runs
	// (default 300 ms).
	StartAfter time.Duration
	// RunFor is how long a pod runs before it ends, unless its container
	// sets EnvFakeDuration (default 1 s).
	RunFor time.Duration
}

func (o SpokeOptions) withDefaults() SpokeOptions {
	if o.StartAfter <= 0 {
		o.StartAfter = 300 * time.Millisecond
	}
	if o.RunFor <= 0 {
		o.RunFor = time.Second
	}
	return o
}

// Spoke is a Cluster that runs Jobs: kube-controller-manager (the job,
// ttl-after-finished, garbage-collector, serviceaccount and
// serviceaccount-token controllers), kwok as the kubelet of one fake
// node (FakeNode), a binder in the test process that schedules pods onto
// it, and Kueue's CRDs (no Kueue controller: see Admitter).
type Spoke struct {
	*Cluster
	// Dynamic is an admin dynamic client (Kueue Workloads, kwok Logs).
	Dynamic dynamic.Interface
	// LogDir holds the pods' log files (see SetJobLog).
	LogDir string
	// Options are the options the Spoke was started with, defaults
	// filled in.
	Options SpokeOptions

	kcm    *process
	kwok   *process
	cancel context.CancelFunc
	done   chan struct{}
}

// SpokeBinaries are the programs a Spoke runs beyond Binaries': from
// SCION_KUBE_CONTROLLER_MANAGER, SCION_KWOK, SCION_KWOK_CRDS and
// SCION_KUEUE_CRDS when set, else the cache .ci/kube-apiserver.sh fills.
type SpokeBinaries struct {
	APIServer, Etcd, ControllerManager, Kwok string
	// KwokCRDs and KueueCRDs are directories of CRD YAML files.
	KwokCRDs, KueueCRDs string
}

// FindSpokeBinaries returns the spoke's programs, or an error that says
// how to get what is missing.
func FindSpokeBinaries() (SpokeBinaries, error) {
	var b SpokeBinaries
	var err error
	if b.APIServer, b.Etcd, err = Binaries(); err != nil {
		return b, err
	}
	base := filepath.Dir(CacheDir())
	pick := func(env, def string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		return def
	}
	b.ControllerManager = pick("SCION_KUBE_CONTROLLER_MANAGER", filepath.Join(CacheDir(), "kube-controller-manager"))
	b.Kwok = pick("SCION_KWOK", filepath.Join(base, "kwok-"+KwokVersion, "kwok"))
	b.KwokCRDs = pick("SCION_KWOK_CRDS", filepath.Join(base, "kwok-"+KwokVersion, "crds"))
	b.KueueCRDs = pick("SCION_KUEUE_CRDS", filepath.Join(base, "kueue-"+KueueVersion, "crds"))
	var missing []string
	for _, p := range []string{b.ControllerManager, b.Kwok} {
		if fi, serr := os.Stat(p); serr != nil || fi.IsDir() {
			missing = append(missing, p)
		}
	}
	for _, p := range []string{b.KwokCRDs, b.KueueCRDs} {
		if fi, serr := os.Stat(p); serr != nil || !fi.IsDir() {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return b, fmt.Errorf("spoke fixture: %s not found: run `eval \"$(.ci/kube-apiserver.sh)\"` (builds kube-controller-manager %s and kwok %s, copies Kueue %s's CRDs)",
			strings.Join(missing, ", "), Version, KwokVersion, KueueVersion)
	}
	return b, nil
}

// StartSpoke starts a Cluster, installs the kwok Logs and Kueue CRDs,
// then runs kube-controller-manager, kwok and the binder, and waits until
// the fake node is Ready and the default ServiceAccount exists (about
// 30 s on two cores). Stop ends everything.
func StartSpoke(ctx context.Context, opts SpokeOptions) (*Spoke, error) {
	bins, err := FindSpokeBinaries()
	if err != nil {
		return nil, err
	}
	// Streaming lists (WatchList) need etcd's RequestWatchProgress, which
	// Debian's etcd 3.4 lacks; kwok's client-go then never gets a watch
	// going (it retries the stream with a growing backoff, so pods change
	// phase up to half a minute late). Refused outright, the request makes
	// every client fall back to list and watch.
	c, err := startCluster(ctx, []string{"--feature-gates", "WatchList=false"})
	if err != nil {
		return nil, err
	}
	s := &Spoke{Cluster: c, Options: opts.withDefaults(), LogDir: filepath.Join(c.dir, "pod-logs")}
	if err := s.start(ctx, bins); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop ends the binder, kwok, the controller manager and the Cluster.
func (s *Spoke) Stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	for _, p := range []*process{s.kwok, s.kcm} {
		if p != nil {
			p.stop()
		}
	}
	s.Cluster.Stop()
}

// Namespace creates a fresh namespace for t and waits for its default
// ServiceAccount, without which no pod may be created.
func (s *Spoke) Namespace(t testing.TB) string {
	t.Helper()
	ns := s.Cluster.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.waitServiceAccount(ctx, ns, "default"); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	return ns
}

// waitServiceAccount polls until the ServiceAccount exists.
func (s *Spoke) waitServiceAccount(ctx context.Context, ns, name string) error {
	return poll(ctx, func() (bool, error) {
		_, err := s.Client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}, func() string { return "service account " + ns + "/" + name + " not created:\n" + s.kcm.tail() })
}

// waitNodeReady polls until kwok has marked FakeNode Ready.
func (s *Spoke) waitNodeReady(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		n, err := s.Client.CoreV1().Nodes().Get(ctx, FakeNode, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}, func() string { return "node " + FakeNode + " not Ready:\n" + s.kwok.tail() })
}

// poll calls cond every 100 ms until it is true, ctx ends (the error
// carries why()), or it fails with an error that is not transient.
func poll(ctx context.Context, cond func() (bool, error), why func() string) error {
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%w: %s", ctx.Err(), why()), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
