package docker

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"

	"github.com/scion-go/scion/runtime"
)

func TestParsePorts(t *testing.T) {
	got, err := ParsePorts(" 8080:31000, 9090/udp:31001,7000 ,7001:0")
	want := []PortMapping{{8080, 31000, "tcp"}, {9090, 31001, "udp"}, {7000, 0, "tcp"}, {7001, 0, "tcp"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParsePorts = %v, %v; want %v", got, err, want)
	}
	if got, err := ParsePorts(""); got != nil || err != nil {
		t.Errorf("ParsePorts(\"\") = %v, %v", got, err)
	}
	for _, bad := range []string{"x", "0:1", "80:70000", "80/sctp:1", "80:", ",", "-1:2"} {
		if _, err := ParsePorts(bad); err == nil {
			t.Errorf("ParsePorts(%q) succeeded", bad)
		}
	}
}

func TestContainerName(t *testing.T) {
	const uuid = "01937c4e-7a1b-7c3d-9e2f-0123456789ab"
	n := containerName("b1", "Fix login/bug!", uuid)
	if !strings.HasPrefix(n, "scion-Fix-login-bug-01937c4e-") || len(n) != len("scion-Fix-login-bug-01937c4e-")+10 {
		t.Errorf("name %q", n)
	}
	if containerName("b1", "x", uuid) == containerName("b2", "x", uuid) {
		t.Error("two brokers' containers of one agent share a name")
	}
	// UUIDv7s minted in the same minute share their first 8 digits.
	if containerName("b1", "x", uuid) == containerName("b1", "x", "01937c4e-0000-7000-8000-000000000000") {
		t.Error("agents with a common ID prefix share a name")
	}
	if n := containerName("b", "", "../.."); !strings.HasPrefix(n, "scion-") || strings.ContainsAny(n, "/") {
		t.Errorf("name %q", n)
	}
}

// TestEventsReconnect breaks the event stream and checks that the watcher
// subscribes again from the last event it handled, skips the replayed
// one, and delivers what came after. Destroy events need no engine.
func TestEventsReconnect(t *testing.T) {
	destroy := func(id string, at time.Time) events.Message {
		return events.Message{
			Type: events.ContainerEventType, Action: events.ActionDestroy, TimeNano: at.UnixNano(),
			Actor: events.Actor{ID: id, Attributes: map[string]string{runtime.LabelAgentID: "agent-" + id, "name": "c-" + id}},
		}
	}
	t0 := time.Now()
	first, second := destroy("one", t0.Add(time.Millisecond)), destroy("two", t0.Add(2*time.Millisecond))
	var sinces []time.Time
	src := func(ctx context.Context, since time.Time) (<-chan events.Message, <-chan error) {
		sinces = append(sinces, since)
		msgs, errs := make(chan events.Message), make(chan error, 1)
		go func() {
			send := func(m events.Message) {
				select {
				case msgs <- m:
				case <-ctx.Done():
				}
			}
			switch len(sinces) {
			case 1:
				send(first)
				errs <- io.ErrUnexpectedEOF // the engine went away
			default:
				send(first) // replayed: since is inclusive
				send(second)
				<-ctx.Done()
			}
		}()
		return msgs, errs
	}
	r := &Runtime{events: make(chan runtime.Event, 10), deleting: map[string]time.Time{}, refs: map[string]containerRef{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.watch(ctx, src, t0); close(done) }()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case ev := <-r.events:
			if ev.Status.State != runtime.StateMissing {
				t.Errorf("event %+v, want missing", ev.Status)
			}
			got = append(got, ev.Status.AgentID)
		case <-timeout:
			t.Fatalf("events so far: %v", got)
		}
	}
	cancel()
	<-done
	if !reflect.DeepEqual(got, []string{"agent-one", "agent-two"}) {
		t.Errorf("events %v, want each once", got)
	}
	if len(sinces) < 2 || !sinces[0].Equal(t0) || sinces[1].UnixNano() != first.TimeNano {
		t.Errorf("subscriptions since %v; want %v, then the first event's time", sinces, t0)
	}
	select {
	case ev := <-r.events:
		t.Errorf("extra event %+v", ev.Status)
	default:
	}
}
