package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

func TestRegisterSavesCredentialsAndHubEndpoint(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "tok")
	useHub(t, "team", h, "tok")

	r := mustRun(t, "runtime-broker", "register", "--name", "gpu", "--auto-provide")
	if !strings.Contains(r.out, "Set server.broker.hub_endpoint") {
		t.Errorf("%s", r.out)
	}
	req := h.requests("POST", "/api/v1/runtime-brokers")[0]
	if req.Auth != "Bearer tok" || req.Body["name"] != "gpu" || req.Body["autoProvide"] != true {
		t.Errorf("request %+v", req)
	}
	c := loadCreds(t).ForHub(h.URL)
	if c == nil || c.BrokerID != "b-1" || c.BrokerName != "gpu" || c.Name != "gpu" || c.Secret != "secret-b-1" || c.HubEndpoint != h.URL {
		t.Fatalf("connection %+v", c)
	}
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != h.URL {
		t.Errorf("hub_endpoint %q", s.Server.Broker.HubEndpoint)
	}

	// A second registration with the same Hub would orphan the first.
	if r := runCLI(t, "", "runtime-broker", "register", "--name", "gpu"); r.code != 1 || !strings.Contains(r.err, "already registered") {
		t.Errorf("re-register: %+v", r)
	}
	mustRun(t, "runtime-broker", "register", "--name", "gpu", "--force")
	if cs := loadCreds(t).Connections; len(cs) != 1 || cs[0].BrokerID != "b-2" {
		t.Errorf("--force: %+v", cs)
	}
}

func TestRegisterKeepsExistingHubEndpoint(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	s := loadSettings(t)
	s.Server.Broker.HubEndpoint = "https://first.example.com"
	s.Extra = map[string]any{"keep": "me"}
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "runtime-broker", "register", "--name", "gpu", "-o", "json")
	var reg registration
	if err := json.Unmarshal([]byte(r.out), &reg); err != nil {
		t.Fatal(err)
	}
	if reg.HubEndpointSaved || reg.BrokerHubEndpoint != "https://first.example.com" || reg.HubEndpoint != h.URL || strings.Contains(r.out, "secret") {
		t.Errorf("%+v\n%s", reg, r.out)
	}
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != "https://first.example.com" || s.Extra["keep"] != "me" {
		t.Errorf("settings changed: %+v", s)
	}
}

// On a host that runs a workstation Hub, register and join never set
// hub_endpoint: the workstation's own broker must keep its Hub.
func TestRegisterOnWorkstationHostLeavesHubEndpoint(t *testing.T) {
	for _, join := range []bool{false, true} {
		setHome(t)
		h := newFakeHub(t, "")
		useHub(t, "team", h, "tok")
		writeWorkstation(t, "http://127.0.0.1:7411", "admin", "b-local")
		args := []string{"runtime-broker", "register", "--name", "gpu"}
		if join {
			args = []string{"runtime-broker", "join", "--token", "jt-good", "--name", "gpu"}
		}
		r := mustRun(t, args...)
		if !strings.Contains(r.out, "workstation Hub") {
			t.Errorf("%s", r.out)
		}
		if s := loadSettings(t); s.Server.Broker.HubEndpoint != "" {
			t.Errorf("join=%v: hub_endpoint set to %q on a workstation host", join, s.Server.Broker.HubEndpoint)
		}
		if loadCreds(t).ForHub(h.URL) == nil {
			t.Errorf("join=%v: credentials not saved", join)
		}
	}
}

func TestJoin(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "tok")
	mustRun(t, "hub", "add", "team", h.URL, "--use") // not signed in: join needs no token

	if r := runCLI(t, "", "runtime-broker", "join", "--name", "gpu"); r.code != 2 {
		t.Errorf("missing --token: %+v", r)
	}
	if r := runCLI(t, "", "runtime-broker", "join", "--token", "jt-bad", "--name", "gpu"); r.code != 1 || !strings.Contains(r.err, "error: unauthorized: invalid join token") {
		t.Errorf("bad token: %+v", r)
	}
	mustRun(t, "runtime-broker", "join", "--token", "jt-good", "--name", "gpu")
	if req := h.requests("POST", "/api/v1/runtime-brokers/join"); req[1].Auth != "" || req[1].Body["joinToken"] != "jt-good" {
		t.Errorf("join request %+v", req[1])
	}
	if c := loadCreds(t).ForHub(h.URL); c == nil || c.BrokerName != "gpu" {
		t.Errorf("connection %+v", c)
	}
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != h.URL {
		t.Errorf("hub_endpoint %q", s.Server.Broker.HubEndpoint)
	}
}

// Two Hubs, one broker name: the second connection gets a distinct name so
// that --name can tell them apart.
func TestConnectionNamesStayDistinct(t *testing.T) {
	setHome(t)
	a, b := newFakeHub(t, ""), newFakeHub(t, "")
	useHub(t, "a", a, "t")
	useHub(t, "b", b, "t")
	mustRun(t, "runtime-broker", "register", "--name", "gpu", "--hub", "a")
	mustRun(t, "runtime-broker", "register", "--name", "gpu", "--hub", "b")
	cs := loadCreds(t).Connections
	if len(cs) != 2 || cs[0].Name != "gpu" || !strings.HasPrefix(cs[1].Name, "gpu@127.0.0.1:") {
		t.Errorf("connections %+v %+v", cs[0], cs[1])
	}
}

func TestProvideWithdrawStatus(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	mustRun(t, "project", "create", "web")
	if r := runCLI(t, "", "runtime-broker", "provide", "--project", "web"); r.code != 1 || !strings.Contains(r.err, "no Runtime Broker registered") {
		t.Errorf("unregistered provide: %+v", r)
	}
	mustRun(t, "runtime-broker", "register", "--name", "gpu")
	r := mustRun(t, "runtime-broker", "provide", "--project", "web")
	if len(h.requests("PUT", "/api/v1/runtime-brokers/b-2/projects/web")) != 1 || !strings.Contains(r.out, "gpu now provides for project web") {
		t.Errorf("provide: %s %+v", r.out, h.reqs)
	}

	r = mustRun(t, "runtime-broker", "status")
	for _, want := range []string{"Name:", "gpu", "b-2", "offline", "Last seen:", "never", "Limit:", "100", "Projects:", "web", "server.broker.hub_endpoint:", h.URL} {
		if !strings.Contains(r.out, want) {
			t.Errorf("status lacks %q:\n%s", want, r.out)
		}
	}
	r = mustRun(t, "runtime-broker", "status", "-o", "json")
	var st map[string]any
	if err := json.Unmarshal([]byte(r.out), &st); err != nil {
		t.Fatal(err)
	}
	if st["id"] != "b-2" || st["localHubEndpoint"] != h.URL {
		t.Errorf("status json %v", st)
	}

	mustRun(t, "runtime-broker", "withdraw", "--project", "web", "--name", "gpu")
	if len(h.requests("DELETE", "/api/v1/runtime-brokers/b-2/projects/web")) != 1 {
		t.Error("withdraw not sent")
	}
	if r := runCLI(t, "", "runtime-broker", "provide"); r.code != 2 {
		t.Errorf("provide without --project: %+v", r)
	}
}

// The workstation Hub's own broker is found through workstation.json when
// nothing else is stored.
func TestProvideWorkstationBroker(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	b := h.addBroker("local", "online", 0, 0)
	writeWorkstation(t, h.URL, "admin", b.ID)
	mustRun(t, "project", "create", "web")
	mustRun(t, "runtime-broker", "provide", "--project", "web")
	if got := h.requests("PUT", "/api/v1/runtime-brokers/"+b.ID+"/projects/web"); len(got) != 1 || got[0].Auth != "Bearer admin" {
		t.Errorf("%+v", got)
	}
}

func conn(name, hub, id string) *config.BrokerConnection {
	return &config.BrokerConnection{Name: name, HubEndpoint: hub, BrokerID: id, BrokerName: name, Secret: "s"}
}

// deregister: the connection comes from the stored connections (--name
// when there are several) or, with none, from the global settings; the
// DELETE goes to the CLI's Hub, with a warning when that is another Hub.
func TestDeregisterSelection(t *testing.T) {
	type setup struct {
		conns         func(hub string) []*config.BrokerConnection
		settingsID    string
		settingsHub   func(hub string) string
		name          string
		wantCode      int
		wantDelete    string // broker ID the DELETE names; "" = no request
		wantErr       string
		wantWarn      bool
		wantLeft      int  // connections left afterwards
		wantIDCleared bool // server.broker.broker_id cleared
	}
	self := func(h string) string { return h }
	other := func(string) string { return "https://other.example.com" }
	cases := map[string]setup{
		"nothing registered":                         {conns: nil, wantCode: 1, wantErr: "no Runtime Broker registration found"},
		"none stored: settings registration":         {settingsID: "b-s", settingsHub: self, wantDelete: "b-s", wantIDCleared: true},
		"none stored: settings on another hub warns": {settingsID: "b-s", settingsHub: other, wantDelete: "b-s", wantWarn: true, wantIDCleared: true},
		"none stored: --name matches settings ID":    {settingsID: "b-s", settingsHub: self, name: "b-s", wantDelete: "b-s", wantIDCleared: true},
		"none stored: --name does not match":         {settingsID: "b-s", settingsHub: self, name: "x", wantCode: 1, wantErr: `no broker registration named "x"`},
		"one stored": {conns: func(h string) []*config.BrokerConnection { return []*config.BrokerConnection{conn("gpu", h, "b-1")} },
			wantDelete: "b-1", wantLeft: 0},
		"one stored beats settings": {conns: func(h string) []*config.BrokerConnection { return []*config.BrokerConnection{conn("gpu", h, "b-1")} },
			settingsID: "b-s", settingsHub: self, wantDelete: "b-1", wantLeft: 0},
		"one stored on another hub warns and still sends to the CLI's hub": {
			conns: func(string) []*config.BrokerConnection {
				return []*config.BrokerConnection{conn("gpu", "https://other.example.com", "b-1")}
			},
			wantDelete: "b-1", wantWarn: true, wantLeft: 0},
		"two stored without --name": {conns: func(h string) []*config.BrokerConnection {
			return []*config.BrokerConnection{conn("gpu", h, "b-1"), conn("cpu", "https://other.example.com", "b-2")}
		}, wantCode: 1, wantErr: "choose one with --name", wantLeft: 2},
		"two stored with --name": {conns: func(h string) []*config.BrokerConnection {
			return []*config.BrokerConnection{conn("gpu", h, "b-1"), conn("cpu", "https://other.example.com", "b-2")}
		}, name: "gpu", wantDelete: "b-1", wantLeft: 1},
		"two stored, --name on another hub": {conns: func(h string) []*config.BrokerConnection {
			return []*config.BrokerConnection{conn("gpu", h, "b-1"), conn("cpu", "https://other.example.com", "b-2")}
		}, name: "cpu", wantDelete: "b-2", wantWarn: true, wantLeft: 1},
		"two stored, unknown --name": {conns: func(h string) []*config.BrokerConnection {
			return []*config.BrokerConnection{conn("gpu", h, "b-1"), conn("cpu", h, "b-2")}
		}, name: "x", wantCode: 1, wantErr: `no stored broker connection named "x"`, wantLeft: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			setHome(t)
			h := newFakeHub(t, "")
			for _, id := range []string{"b-1", "b-2", "b-s"} {
				h.brokers = append(h.brokers, &api.RuntimeBroker{ID: id, Name: id, Projects: []string{}})
			}
			useHub(t, "team", h, "tok")
			if tc.conns != nil {
				saveCreds(t, tc.conns(h.URL)...)
			}
			if tc.settingsID != "" {
				s := loadSettings(t)
				s.Server.Broker.BrokerID, s.Server.Broker.HubEndpoint = tc.settingsID, tc.settingsHub(h.URL)
				if err := s.Save(); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"runtime-broker", "deregister"}
			if tc.name != "" {
				args = append(args, "--name", tc.name)
			}
			r := runCLI(t, "", args...)
			if r.code != tc.wantCode || (tc.wantErr != "" && !strings.Contains(r.err, tc.wantErr)) {
				t.Fatalf("exit %d, stderr %q; want %d, %q", r.code, r.err, tc.wantCode, tc.wantErr)
			}
			var deleted []string
			for _, q := range h.reqs {
				if q.Method == "DELETE" {
					deleted = append(deleted, q.Path)
				}
			}
			if tc.wantDelete == "" && len(deleted) != 0 || tc.wantDelete != "" && (len(deleted) != 1 || deleted[0] != "/api/v1/runtime-brokers/"+tc.wantDelete) {
				t.Errorf("DELETEs %v, want %q", deleted, tc.wantDelete)
			}
			warned := strings.Contains(r.err, "warning:") && strings.Contains(r.err, "https://other.example.com") && strings.Contains(r.err, h.URL)
			if warned != tc.wantWarn {
				t.Errorf("warning %v, want %v: %q", warned, tc.wantWarn, r.err)
			}
			if n := len(loadCreds(t).Connections); n != tc.wantLeft {
				t.Errorf("%d connections left, want %d", n, tc.wantLeft)
			}
			if cleared := tc.settingsID != "" && loadSettings(t).Server.Broker.BrokerID == ""; cleared != tc.wantIDCleared {
				t.Errorf("broker_id cleared %v, want %v", cleared, tc.wantIDCleared)
			}
		})
	}
}

// A failed deregistration (here: the broker is unknown to the CLI's Hub)
// keeps the stored connection, which may be valid for its own Hub.
func TestDeregisterFailureKeepsConnection(t *testing.T) {
	setHome(t)
	h := newFakeHub(t, "")
	useHub(t, "team", h, "tok")
	saveCreds(t, conn("gpu", "https://other.example.com", "b-9"))
	r := runCLI(t, "", "runtime-broker", "deregister")
	if r.code != 1 || !strings.Contains(r.err, "error: runtime_broker_not_found: ") {
		t.Errorf("%+v", r)
	}
	if len(loadCreds(t).Connections) != 1 {
		t.Error("connection removed after a failed deregistration")
	}
}
