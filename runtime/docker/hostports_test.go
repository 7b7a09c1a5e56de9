package docker

import (
	"errors"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/scion-go/scion/runtime"
)

func TestForeignPorts(t *testing.T) {
	agent := func(broker, ports string) container.Summary {
		return container.Summary{Labels: map[string]string{runtime.LabelAgentID: "a", runtime.LabelBrokerID: broker, LabelPorts: ports}}
	}
	published := func(c container.Summary, ports ...uint16) container.Summary {
		for _, p := range ports {
			c.Ports = append(c.Ports, container.Port{PrivatePort: 80, PublicPort: p, Type: "tcp"})
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cs   []container.Summary
		want []int
	}{
		{"none", nil, nil},
		{"own agents are the pool's", []container.Summary{agent("me", "8080:31000"), published(agent("me", "8080:31001"), 31001)}, nil},
		{"another broker's agent, stopped: its label", []container.Summary{agent("other", "8080:31000,9090/udp:31002")}, []int{31000, 31002}},
		{"another broker's agent, running: label and bindings once", []container.Summary{published(agent("other", "8080:31000"), 31000)}, []int{31000}},
		{"an engine-chosen port in a label is no claim", []container.Summary{agent("other", "8080:0")}, nil},
		{"an unreadable label counts for nothing", []container.Summary{agent("other", "x:y")}, nil},
		{"any other running container: what it publishes", []container.Summary{published(container.Summary{}, 31005, 0)}, []int{31005}},
		{"a container's label without an agent ID is not ours to read", []container.Summary{{Labels: map[string]string{LabelPorts: "8080:31000"}}}, nil},
		{"sorted, each once", []container.Summary{agent("b", "1:31009"), agent("c", "1:31001,2:31009")}, []int{31001, 31009}},
	} {
		if got := foreignPorts(tc.cs, "me"); !slices.Equal(got, tc.want) {
			t.Errorf("%s: foreignPorts = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHostPortTaken(t *testing.T) {
	for _, tc := range []struct {
		cause string
		taken bool
		port  int
	}{
		{"driver failed programming external connectivity on endpoint x (0123): Bind for 0.0.0.0:31001 failed: port is already allocated", true, 31001},
		{"Error starting userland proxy: listen tcp4 127.0.0.1:31002: bind: address already in use", true, 31002},
		{"rootlessport listen tcp [::]:31003: bind: address already in use", true, 31003},
		{"listen udp6 [::1]:31004: bind: address already in use", true, 31004},
		{"port is already allocated", true, 0},
		{"Bind for 0.0.0.0:99999 failed: port is already allocated", true, 0},
		{`exec: "nope": executable file not found in $PATH`, false, 0},
		{"Bind for 0.0.0.0:31001 failed: permission denied", false, 0},
	} {
		taken, port := hostPortTaken(tc.cause)
		if taken != tc.taken || port != tc.port {
			t.Errorf("%q: hostPortTaken = %v, %d; want %v, %d", tc.cause, taken, port, tc.taken, tc.port)
		}
		err := error(&StartError{AgentID: "a", ExitCode: 128, Cause: tc.cause})
		var hp *runtime.HostPortTakenError
		if errors.Is(err, runtime.ErrHostPortTaken) != tc.taken || (tc.taken && (!errors.As(err, &hp) || hp.Port != tc.port)) {
			t.Errorf("%q: StartError %v: ErrHostPortTaken %v (%+v), want %v on port %d", tc.cause, err, errors.Is(err, runtime.ErrHostPortTaken), hp, tc.taken, tc.port)
		}
	}
}
