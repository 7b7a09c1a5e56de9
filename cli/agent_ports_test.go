package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestCreatePortFlag(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	mustRun(t, "project", "create", "default")

	mustRun(t, "create", "web", "--port", "8080", "--port", "9090,9091")
	body := h.requests("POST", "/api/v1/agents")[0].Body
	if got, _ := json.Marshal(body["ports"]); string(got) != "[8080,9090,9091]" {
		t.Errorf("ports sent = %s", got)
	}
	// Bad ports are a usage error and nothing is sent.
	for _, bad := range [][]string{{"--port", "0"}, {"--port", "70000"}, {"--port", "80", "--port", "80"}} {
		r := runCLI(t, "", append([]string{"create", "bad"}, bad...)...)
		if r.code != exitUsage || !strings.Contains(r.err, "--port") {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	if n := len(h.requests("POST", "/api/v1/agents")); n != 1 {
		t.Errorf("%d creates sent, want 1", n)
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
