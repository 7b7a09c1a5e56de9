package portpool

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/scion-go/scion/api"
)

func newPool(t *testing.T, lo, hi int) *Pool {
	t.Helper()
	p, err := New("b1", lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPortPoolConcurrentAllocate: 50 agents race for a 40-port range:
// exactly 40 win, each with its own port inside the range; the rest get
// port_pool_exhausted.
func TestPortPoolConcurrentAllocate(t *testing.T) {
	p := newPool(t, 31000, 31039)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		got       = map[int]string{}
		exhausted int
	)
	for i := range 50 {
		wg.Go(func() {
			id := fmt.Sprintf("agent-%d", i)
			ports, err := p.allocate(id, 1)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if !api.IsCode(err, api.CodePortPoolExhausted) {
					t.Errorf("%s: %v", id, err)
				}
				exhausted++
				return
			}
			if len(ports) != 1 || ports[0] < 31000 || ports[0] > 31039 {
				t.Errorf("%s got %v", id, ports)
				return
			}
			if other, dup := got[ports[0]]; dup {
				t.Errorf("port %d given to %s and %s", ports[0], other, id)
			}
			got[ports[0]] = id
		})
	}
	wg.Wait()
	if len(got) != 40 || exhausted != 10 || p.free() != 0 {
		t.Fatalf("%d allocated, %d exhausted, %d free; want 40, 10, 0", len(got), exhausted, p.free())
	}
	for port, id := range got {
		if h := p.holder(port); h != id {
			t.Errorf("holder(%d) = %q, want %q", port, h, id)
		}
	}
}

func TestPortPoolExhaustionTakesNothing(t *testing.T) {
	p := newPool(t, 100, 103)
	if _, err := p.allocate("a", 1); err != nil {
		t.Fatal(err)
	}
	_, err := p.allocate("b", 4)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodePortPoolExhausted || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want 503 port_pool_exhausted", err)
	}
	if api.StatusForCode(api.CodePortPoolExhausted) != http.StatusServiceUnavailable {
		t.Error("StatusForCode(port_pool_exhausted) is not 503")
	}
	if p.free() != 3 || p.heldBy("b") != nil {
		t.Fatalf("a failed allocation took ports: free %d, b holds %v", p.free(), p.heldBy("b"))
	}
	// The three left still go to someone asking for three.
	if ports, err := p.allocate("c", 3); err != nil || len(ports) != 3 {
		t.Fatalf("Allocate 3 of 3 free = %v, %v", ports, err)
	}
	if _, err := p.allocate("d", 0); err != nil {
		t.Fatalf("no ports from a full pool: %v", err)
	}
}

func TestPortPoolReleaseAndReacquire(t *testing.T) {
	p := newPool(t, 100, 104)
	a, err := p.allocate("a", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Taking one's own ports again (a start, a resume) changes nothing.
	if err := p.Acquire("a", a); err != nil || !reflect.DeepEqual(p.heldBy("a"), a) {
		t.Fatalf("re-acquire own ports: %v, holds %v", err, p.heldBy("a"))
	}
	p.Release("a")
	if p.free() != 5 || p.holder(a[0]) != "" {
		t.Fatalf("after release: free %d, holder %q", p.free(), p.holder(a[0]))
	}
	// Next fit: a new agent gets the ports nobody had last, not a's.
	b, err := p.allocate("b", 2)
	if err != nil || slices.Contains(b, a[0]) || slices.Contains(b, a[1]) {
		t.Fatalf("b got %v (%v) while untouched ports were free; a had %v", b, err, a)
	}
	if err := p.Acquire("a", a); err != nil {
		t.Fatalf("a takes its old ports back: %v", err)
	}
	// c gets the last free port; a's and b's are taken.
	c, err := p.allocate("c", 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Release("a")
	if _, err := p.allocate("d", 2); err != nil { // takes a's two ports
		t.Fatal(err)
	}
	// a cannot start again: all or nothing, naming the port and holder.
	err = p.Acquire("a", a)
	var pc *Conflict
	if !errors.As(err, &pc) || pc.Holder != "d" || !slices.Contains(a, pc.Port) {
		t.Fatalf("Acquire of taken ports = %v", err)
	}
	if p.heldBy("a") != nil {
		t.Fatalf("a failed acquire took %v", p.heldBy("a"))
	}
	if p.holder(c[0]) != "c" || p.free() != 0 {
		t.Fatalf("pool changed: holder %q, free %d", p.holder(c[0]), p.free())
	}
}

func TestPortPoolRange(t *testing.T) {
	for _, r := range [][2]int{{0, 10}, {10, 9}, {65000, 65536}} {
		if _, err := New("b", r[0], r[1]); err == nil {
			t.Errorf("range %v accepted", r)
		}
	}
	// Ports outside the range (a range narrowed across restarts) are
	// tracked but do not count towards the range's free ports.
	p := newPool(t, 100, 101)
	if err := p.Acquire("old", []int{5000}); err != nil {
		t.Fatal(err)
	}
	if p.free() != 2 || p.holder(5000) != "old" {
		t.Fatalf("free %d, holder %q", p.free(), p.holder(5000))
	}
}

func TestPortPoolSkipsBusyHostPorts(t *testing.T) {
	p := newPool(t, 40000, 40004)
	busy := map[int]bool{40000: true, 40002: true}
	p.CheckHost(func(port int) bool { return busy[port] })
	got, err := p.allocate("a", 3)
	if err != nil || !reflect.DeepEqual(got, []int{40001, 40003, 40004}) {
		t.Fatalf("allocate = %v, %v", got, err)
	}
	if _, err := p.allocate("b", 1); !api.IsCode(err, api.CodePortPoolExhausted) {
		t.Fatalf("with every free port busy on the host: %v", err)
	}
	// A real busy port is seen as busy.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !HostBusy(ln.Addr().(*net.TCPAddr).Port) {
		t.Fatal("a listening port is not reported busy")
	}
}

// Ports the caller knows to be held elsewhere (another broker's stopped
// agent, a port the engine just refused) are passed over like busy ones,
// for that allocation only.
func TestPortPoolAllocateExcepted(t *testing.T) {
	p := newPool(t, 40000, 40003)
	got, err := p.Allocate("a", 2, map[int]bool{40000: true, 40002: true})
	if err != nil || !reflect.DeepEqual(got, []int{40001, 40003}) {
		t.Fatalf("allocate = %v, %v", got, err)
	}
	if _, err := p.Allocate("b", 1, map[int]bool{40000: true, 40002: true}); !api.IsCode(err, api.CodePortPoolExhausted) {
		t.Fatalf("with the free ports excepted: %v", err)
	}
	if got, err := p.Allocate("b", 2, nil); err != nil || !reflect.DeepEqual(got, []int{40000, 40002}) {
		t.Fatalf("without exceptions = %v, %v; want the two left", got, err)
	}
}
