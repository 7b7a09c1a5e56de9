package jobs

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv/kube"
	"github.com/scion-go/scion/spoke/fleet"
)

// flakyPath is a TCP forwarder to the spoke's API server that a test
// takes down (every connection cut, new ones refused) and brings back:
// a WAN blip or a reconnecting tunnel on the real client path.
type flakyPath struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	down     bool
	conns    map[net.Conn]bool
}

func newFlakyPath(t *testing.T, upstream string) *flakyPath {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyPath{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.setDown(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *flakyPath) serve(c net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.mu.Unlock()
	u, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { io.Copy(u, c); u.Close() }()
	io.Copy(c, u)
	c.Close()
}

func (p *flakyPath) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// clientsThrough builds the broker's clients for the spoke's bootstrap
// ServiceAccount with the API server reached through path.
func clientsThrough(t *testing.T, o *onSpoke, path *flakyPath) Clients {
	kc := o.spoke.KubeconfigBytes("https://"+path.ln.Addr().String(), o.token, o.ns)
	cfg, _, err := fleet.RESTConfig(&fleet.Cluster{Name: "b200", KubeconfigSecret: "SPOKE_B200_KUBECONFIG"}, kc,
		fleet.Options{ConnectTimeout: time.Second, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	kcs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Clients{Kube: kcs}
}

func apiHostPort(t *testing.T, s *kube.Spoke) string {
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestSpokeUnreachableWhileRunningIsRetried: the path to the spoke goes
// down while the Job runs, for several polls, and comes back; the Job is
// followed on to its result, never given up.
func TestSpokeUnreachableWhileRunningIsRetried(t *testing.T) {
	o := newOnSpoke(t)
	path := newFlakyPath(t, apiHostPort(t, o.spoke))
	c := clientsThrough(t, o, path)
	s := o.spec("blip-1", map[string]string{kube.EnvFakeDuration: "4s"})
	o.spoke.SetJobLog(t, o.ns, Name(s.JobID), "::scion-result:: 42\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Submit(ctx, c, s); err != nil {
		t.Fatal(err)
	}
	retries, wentDown := 0, false
	final := Follow(ctx, c, s, FollowOptions{PollInterval: 100 * time.Millisecond, RetryFor: time.Minute}, func(p Progress) {
		if p.State == api.JobStateError {
			t.Errorf("given up: %+v", p)
		}
		if p.State == api.JobStateRunning && !wentDown {
			wentDown = true
			path.setDown(true)
		}
		if strings.HasPrefix(p.Message, "spoke unreachable (retrying)") {
			retries++
			if retries == 3 {
				path.setDown(false)
			}
		}
	})
	if final.State != api.JobStateSucceeded || string(final.Result) != "42" {
		t.Fatalf("final %+v", final)
	}
	if retries < 3 {
		t.Errorf("%d retrying reports", retries)
	}
}

// TestSpokeUnreachableForGoodIsTypedError: a path that stays down past
// RetryFor gives the Job up with the typed error naming the spoke and its
// tier.
func TestSpokeUnreachableForGoodIsTypedError(t *testing.T) {
	o := newOnSpoke(t)
	path := newFlakyPath(t, apiHostPort(t, o.spoke))
	c := clientsThrough(t, o, path)
	s := o.spec("gone-1", map[string]string{kube.EnvFakeDuration: "10m"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Submit(ctx, c, s); err != nil {
		t.Fatal(err)
	}
	final := Follow(ctx, c, s, FollowOptions{PollInterval: 100 * time.Millisecond, RetryFor: 2 * time.Second}, func(p Progress) {
		if p.State == api.JobStateRunning {
			path.setDown(true)
		}
	})
	if final.State != api.JobStateError || final.Error == nil {
		t.Fatalf("final %+v", final)
	}
	if e := final.Error; e.Status != "error" || e.Cluster != "b200" || e.Tier != "public" || !strings.Contains(e.Message, "unreachable") {
		t.Errorf("error %+v", e)
	}
	_ = Cancel(context.Background(), Clients{Kube: o.spoke.Client}, s.Namespace, s.JobID)
}
