package broker

import (
	"reflect"
	"slices"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/wire"
)

// TestPortLabelIsDockers: the broker writes and reads scion.ports exactly
// as runtime/docker does.
func TestPortLabelIsDockers(t *testing.T) {
	ms := []api.PortMapping{{ContainerPort: 8080, HostPort: 31000, Protocol: "tcp"},
		{ContainerPort: 9090, HostPort: 31001, Protocol: "udp"}}
	s := formatPorts(ms)
	dms, err := docker.ParsePorts(s)
	if err != nil {
		t.Fatal(err)
	}
	if labelPorts != docker.LabelPorts || len(dms) != len(ms) {
		t.Fatalf("label %q = %q, docker reads %v", labelPorts, s, dms)
	}
	for i, d := range dms {
		if d.Container != ms[i].ContainerPort || d.Host != ms[i].HostPort || d.Proto != ms[i].Protocol {
			t.Errorf("mapping %d: docker %+v, broker %+v", i, d, ms[i])
		}
	}
	back, err := parsePorts(" 8080:31000, 9090/UDP:31001,7000")
	want := append(slices.Clone(ms), api.PortMapping{ContainerPort: 7000, Protocol: "tcp"})
	if err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("parsePorts = %v, %v; want %v", back, err, want)
	}
	for _, bad := range []string{"x:1", "80/sctp:1", "80:70000", "0:1"} {
		if _, err := parsePorts(bad); err == nil {
			t.Errorf("parsePorts(%q) succeeded", bad)
		}
	}
}

func TestProfileLabels(t *testing.T) {
	b := &Broker{cfg: Config{Profiles: []wire.Profile{{Name: "big", Settings: map[string]string{"memory": "2g", "cpus": "2", "other": "x"}}, {Name: "small"}}}}
	got := b.profileLabels("big")
	if len(got) != 2 || got["scion.memory"] != "2g" || got["scion.cpus"] != "2" {
		t.Fatalf("big: %v", got)
	}
	if got := b.profileLabels("small"); len(got) != 0 {
		t.Fatalf("small: %v", got)
	}
	if got := b.profileLabels("nope"); len(got) != 0 {
		t.Fatalf("unknown: %v", got)
	}
}
