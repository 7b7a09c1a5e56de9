package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

func TestCreatePortFlag(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{Brokers: 1})
	useHub(t, "team", e.URL, e.AdminToken)

	mustRun(t, "create", "web", "--port", "8080", "--port", "9090,9091", "--", "x")
	// Ports show while the container holds them: start it to see them.
	a, err := e.Admin.AgentAction(context.Background(), "web", "default", "start")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, p := range a.Ports {
		got = append(got, p.ContainerPort)
	}
	if !slices.Equal(got, []int{8080, 9090, 9091}) {
		t.Errorf("the agent's ports = %+v, want 8080, 9090, 9091", a.Ports)
	}
	// Bad ports are a usage error and nothing is sent.
	before := hubRequests(t, e)
	for _, bad := range [][]string{{"--port", "0"}, {"--port", "70000"}, {"--port", "80", "--port", "80"}} {
		r := runCLI(t, "", append([]string{"create", "bad"}, bad...)...)
		if r.code != exitUsage || !strings.Contains(r.err, "--port") {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	if n := hubRequests(t, e); n != before {
		t.Errorf("bad --port command lines sent %d requests to the Hub", n-before)
	}
}

func TestParsePortRange(t *testing.T) {
	if r, err := parsePortRange(" 32000 - 32099"); err != nil || r != [2]int{32000, 32099} {
		t.Errorf("parsePortRange = %v, %v", r, err)
	}
	if r, err := parsePortRange(""); err != nil || r != [2]int{} {
		t.Errorf("empty range = %v, %v", r, err)
	}
	for _, bad := range []string{"32000", "0-10", "10-9", "1-65536", "a-b"} {
		if _, err := parsePortRange(bad); err == nil || !isUsage(err) {
			t.Errorf("parsePortRange(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestPortsCell(t *testing.T) {
	got := portsCell([]api.PortMapping{{ContainerPort: 8080, HostPort: 31000, Protocol: "tcp"}, {ContainerPort: 53, HostPort: 31001, Protocol: "udp"}, {ContainerPort: 1, HostPort: 2}})
	if got != "31000->8080/tcp,31001->53/udp,2->1/tcp" {
		t.Errorf("portsCell = %q", got)
	}
}
