package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/testenv"
)

func TestRegisterSavesCredentialsAndHubEndpoint(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()

	r := mustRun(t, "runtime-broker", "register", "--name", "gpu", "--auto-provide")
	if !strings.Contains(r.out, "Set server.broker.hub_endpoint") {
		t.Errorf("%s", r.out)
	}
	b, err := e.Admin.GetBroker(ctx, "gpu")
	if err != nil || !b.AutoProvide {
		t.Fatalf("registered broker %+v, %v; want gpu with auto-provide", b, err)
	}
	c := loadCreds(t).ForHub(e.URL)
	if c == nil || c.BrokerID != b.ID || c.BrokerName != "gpu" || c.Name != "gpu" || c.Secret == "" || c.HubEndpoint != e.URL {
		t.Fatalf("connection %+v", c)
	}
	if strings.Contains(r.out, c.Secret) {
		t.Error("register printed the broker secret")
	}
	// The stored secret is the broker's: a broker run with it comes online.
	e.RunBroker(c.BrokerID, "gpu", c.Secret)
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != e.URL {
		t.Errorf("hub_endpoint %q", s.Server.Broker.HubEndpoint)
	}

	// A second registration with the same Hub would orphan the first.
	if r := runCLI(t, "", "runtime-broker", "register", "--name", "gpu"); r.code != 1 || !strings.Contains(r.err, "already registered") {
		t.Errorf("re-register: %+v", r)
	}
	// --force passes that check; the Hub still refuses a second broker of
	// the same name, and the stored connection stays.
	if r := runCLI(t, "", "runtime-broker", "register", "--name", "gpu", "--force"); r.code != 1 || !strings.Contains(r.err, "error: already_exists: ") {
		t.Errorf("re-register --force of the same name: %+v", r)
	}
	if cs := loadCreds(t).Connections; len(cs) != 1 || cs[0].BrokerID != b.ID {
		t.Errorf("after a refused registration: %+v", cs)
	}
	mustRun(t, "runtime-broker", "register", "--name", "gpu2", "--force")
	b2, err := e.Admin.GetBroker(ctx, "gpu2")
	if err != nil {
		t.Fatal(err)
	}
	if cs := loadCreds(t).Connections; len(cs) != 1 || cs[0].BrokerID != b2.ID || b2.ID == b.ID {
		t.Errorf("--force: %+v, want the one connection of the new broker %s", cs, b2.ID)
	}
}

func TestRegisterKeepsExistingHubEndpoint(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
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
	if reg.HubEndpointSaved || reg.BrokerHubEndpoint != "https://first.example.com" || reg.HubEndpoint != e.URL || strings.Contains(r.out, "secret") {
		t.Errorf("%+v\n%s", reg, r.out)
	}
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != "https://first.example.com" || s.Extra["keep"] != "me" {
		t.Errorf("settings changed: %+v", s)
	}
}

// joinToken is a join token of the Hub's, made for name when it is not
// empty.
func joinToken(t *testing.T, e *testenv.Env, name string) string {
	t.Helper()
	jt, err := e.Admin.CreateJoinToken(context.Background(), api.CreateJoinTokenRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return jt.Token
}

// On a host that runs a workstation Hub, register and join never set
// hub_endpoint: the workstation's own broker must keep its Hub.
func TestRegisterOnWorkstationHostLeavesHubEndpoint(t *testing.T) {
	for _, join := range []bool{false, true} {
		setHome(t)
		e := newHub(t, testenv.Options{})
		useHub(t, "team", e.URL, e.AdminToken)
		writeWorkstation(t, "http://127.0.0.1:7411", "admin", "b-local")
		args := []string{"runtime-broker", "register", "--name", "gpu"}
		if join {
			args = []string{"runtime-broker", "join", "--token", joinToken(t, e, ""), "--name", "gpu"}
		}
		r := mustRun(t, args...)
		if !strings.Contains(r.out, "workstation Hub") {
			t.Errorf("%s", r.out)
		}
		if s := loadSettings(t); s.Server.Broker.HubEndpoint != "" {
			t.Errorf("join=%v: hub_endpoint set to %q on a workstation host", join, s.Server.Broker.HubEndpoint)
		}
		if c := loadCreds(t).ForHub(e.URL); c == nil || c.BrokerID != brokerID(t, e, "gpu") {
			t.Errorf("join=%v: credentials not saved: %+v", join, c)
		}
	}
}

func TestJoin(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	mustRun(t, "hub", "add", "team", e.URL, "--use") // not signed in: join needs no token

	if r := runCLI(t, "", "runtime-broker", "join", "--name", "gpu"); r.code != 2 {
		t.Errorf("missing --token: %+v", r)
	}
	if r := runCLI(t, "", "runtime-broker", "join", "--token", "scj_bad", "--name", "gpu"); r.code != 1 || !strings.HasPrefix(r.err, "error: unauthorized: invalid, used or expired join token") ||
		strings.Contains(r.err, "sign in") {
		// A join needs no sign-in: the 401 is about the join token alone.
		t.Errorf("bad token: %+v", r)
	}
	mustRun(t, "runtime-broker", "join", "--token", joinToken(t, e, ""), "--name", "gpu")
	c := loadCreds(t).ForHub(e.URL)
	if c == nil || c.BrokerName != "gpu" || c.BrokerID != brokerID(t, e, "gpu") {
		t.Fatalf("connection %+v", c)
	}
	e.RunBroker(c.BrokerID, "gpu", c.Secret) // the joined broker's secret works
	if s := loadSettings(t); s.Server.Broker.HubEndpoint != e.URL {
		t.Errorf("hub_endpoint %q", s.Server.Broker.HubEndpoint)
	}
}

// Two Hubs, one broker name: the second connection gets a distinct name so
// that --name can tell them apart.
func TestConnectionNamesStayDistinct(t *testing.T) {
	setHome(t)
	a, b := newHub(t, testenv.Options{}), newHub(t, testenv.Options{})
	useHub(t, "a", a.URL, a.AdminToken)
	useHub(t, "b", b.URL, b.AdminToken)
	mustRun(t, "runtime-broker", "register", "--name", "gpu", "--hub", "a")
	mustRun(t, "runtime-broker", "register", "--name", "gpu", "--hub", "b")
	cs := loadCreds(t).Connections
	if len(cs) != 2 || cs[0].Name != "gpu" || !strings.HasPrefix(cs[1].Name, "gpu@127.0.0.1:") {
		t.Errorf("connections %+v %+v", cs[0], cs[1])
	}
	if cs[0].BrokerID != brokerID(t, a, "gpu") || cs[1].BrokerID != brokerID(t, b, "gpu") {
		t.Errorf("connections %+v %+v: want each Hub's own gpu", cs[0], cs[1])
	}
}

func TestProvideWithdrawStatus(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	ctx := context.Background()
	mustRun(t, "project", "create", "web")
	web, err := e.Admin.GetProject(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "runtime-broker", "provide", "--project", "web"); r.code != 1 || !strings.Contains(r.err, "no Runtime Broker registered") {
		t.Errorf("unregistered provide: %+v", r)
	}
	mustRun(t, "runtime-broker", "register", "--name", "gpu")
	id := brokerID(t, e, "gpu")
	r := mustRun(t, "runtime-broker", "provide", "--project", "web")
	if b, err := e.Admin.GetBroker(ctx, id); err != nil || !slices.Contains(b.Projects, web.ID) || !strings.Contains(r.out, "gpu now provides for project web") {
		t.Errorf("provide: %s; broker %+v, %v", r.out, b, err)
	}

	r = mustRun(t, "runtime-broker", "status")
	for _, want := range []string{"Name:", "gpu", id, "offline", "Last seen:", "never", "Limit:", "100", "Projects:", "web", "server.broker.hub_endpoint:", e.URL} {
		if !strings.Contains(r.out, want) {
			t.Errorf("status lacks %q:\n%s", want, r.out)
		}
	}
	r = mustRun(t, "runtime-broker", "status", "-o", "json")
	var st map[string]any
	if err := json.Unmarshal([]byte(r.out), &st); err != nil {
		t.Fatal(err)
	}
	if st["id"] != id || st["localHubEndpoint"] != e.URL {
		t.Errorf("status json %v", st)
	}

	mustRun(t, "runtime-broker", "withdraw", "--project", "web", "--name", "gpu")
	if b, err := e.Admin.GetBroker(ctx, id); err != nil || slices.Contains(b.Projects, web.ID) {
		t.Errorf("after withdraw: broker %+v, %v", b, err)
	}
	if r := runCLI(t, "", "runtime-broker", "provide"); r.code != 2 {
		t.Errorf("provide without --project: %+v", r)
	}
}

// The workstation Hub's own broker is found through workstation.json when
// nothing else is stored.
func TestProvideWorkstationBroker(t *testing.T) {
	setHome(t)
	e := newHub(t, testenv.Options{})
	b := e.AddBroker("local")
	writeWorkstation(t, e.URL, e.AdminToken, b.ID)
	mustRun(t, "project", "create", "web")
	mustRun(t, "runtime-broker", "provide", "--project", "web")
	ctx := context.Background()
	web, err := e.Admin.GetProject(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.Admin.GetBroker(ctx, b.ID); err != nil || !slices.Contains(got.Projects, web.ID) {
		t.Errorf("the workstation's broker %+v, %v: want it providing for web", got, err)
	}
}

func conn(name, hub, id string) *config.BrokerConnection {
	return &config.BrokerConnection{Name: name, HubEndpoint: hub, BrokerID: id, BrokerName: name, Secret: "s"}
}

// deregister: the connection comes from the stored connections (--name
// when there are several) or, with none, from the global settings; the
// DELETE goes to the CLI's Hub, with a warning when that is another Hub.
func TestDeregisterSelection(t *testing.T) {
	// Brokers b-1, b-2 and b-s are registered with the Hub; the table names
	// them, id gives their IDs.
	type setup struct {
		conns         func(hub string, id func(string) string) []*config.BrokerConnection
		settingsID    string // a broker's name: its ID goes in server.broker.broker_id
		settingsHub   func(hub string) string
		name          string
		nameIsID      bool // --name is the ID of the broker name names
		wantCode      int
		wantDelete    string // the broker deregistered; "" = none
		wantErr       string
		wantWarn      bool
		wantLeft      int  // connections left afterwards
		wantIDCleared bool // server.broker.broker_id cleared
	}
	self := func(h string) string { return h }
	other := func(string) string { return "https://other.example.com" }
	one := func(h string, id func(string) string) []*config.BrokerConnection {
		return []*config.BrokerConnection{conn("gpu", h, id("b-1"))}
	}
	two := func(h string, id func(string) string) []*config.BrokerConnection {
		return []*config.BrokerConnection{conn("gpu", h, id("b-1")), conn("cpu", "https://other.example.com", id("b-2"))}
	}
	cases := map[string]setup{
		"nothing registered":                         {conns: nil, wantCode: 1, wantErr: "no Runtime Broker registration found"},
		"none stored: settings registration":         {settingsID: "b-s", settingsHub: self, wantDelete: "b-s", wantIDCleared: true},
		"none stored: settings on another hub warns": {settingsID: "b-s", settingsHub: other, wantDelete: "b-s", wantWarn: true, wantIDCleared: true},
		"none stored: --name matches settings ID":    {settingsID: "b-s", settingsHub: self, name: "b-s", nameIsID: true, wantDelete: "b-s", wantIDCleared: true},
		"none stored: --name does not match":         {settingsID: "b-s", settingsHub: self, name: "x", wantCode: 1, wantErr: `no broker registration named "x"`},
		"one stored":                                 {conns: one, wantDelete: "b-1", wantLeft: 0},
		"one stored beats settings":                  {conns: one, settingsID: "b-s", settingsHub: self, wantDelete: "b-1", wantLeft: 0},
		"one stored on another hub warns and still sends to the CLI's hub": {
			conns: func(_ string, id func(string) string) []*config.BrokerConnection {
				return []*config.BrokerConnection{conn("gpu", "https://other.example.com", id("b-1"))}
			},
			wantDelete: "b-1", wantWarn: true, wantLeft: 0},
		"two stored without --name":         {conns: two, wantCode: 1, wantErr: "choose one with --name", wantLeft: 2},
		"two stored with --name":            {conns: two, name: "gpu", wantDelete: "b-1", wantLeft: 1},
		"two stored, --name on another hub": {conns: two, name: "cpu", wantDelete: "b-2", wantWarn: true, wantLeft: 1},
		"two stored, unknown --name": {conns: func(h string, id func(string) string) []*config.BrokerConnection {
			return []*config.BrokerConnection{conn("gpu", h, id("b-1")), conn("cpu", h, id("b-2"))}
		}, name: "x", wantCode: 1, wantErr: `no stored broker connection named "x"`, wantLeft: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			setHome(t)
			e := newHub(t, testenv.Options{})
			ids := map[string]string{}
			for _, b := range []string{"b-1", "b-2", "b-s"} {
				ids[b] = registerBroker(t, e, b)
			}
			id := func(name string) string { return ids[name] }
			useHub(t, "team", e.URL, e.AdminToken)
			if tc.conns != nil {
				saveCreds(t, tc.conns(e.URL, id)...)
			}
			if tc.settingsID != "" {
				s := loadSettings(t)
				s.Server.Broker.BrokerID, s.Server.Broker.HubEndpoint = id(tc.settingsID), tc.settingsHub(e.URL)
				if err := s.Save(); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"runtime-broker", "deregister"}
			if tc.nameIsID {
				args = append(args, "--name", id(tc.name))
			} else if tc.name != "" {
				args = append(args, "--name", tc.name)
			}
			r := runCLI(t, "", args...)
			if r.code != tc.wantCode || (tc.wantErr != "" && !strings.Contains(r.err, tc.wantErr)) {
				t.Fatalf("exit %d, stderr %q; want %d, %q", r.code, r.err, tc.wantCode, tc.wantErr)
			}
			left, err := e.Admin.ListAllBrokers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var gone []string
			for _, b := range []string{"b-1", "b-2", "b-s"} {
				if !slices.ContainsFunc(left, func(x api.RuntimeBroker) bool { return x.ID == ids[b] }) {
					gone = append(gone, b)
				}
			}
			if tc.wantDelete == "" && len(gone) != 0 || tc.wantDelete != "" && (len(gone) != 1 || gone[0] != tc.wantDelete) {
				t.Errorf("deregistered %v, want %q", gone, tc.wantDelete)
			}
			warned := strings.Contains(r.err, "warning:") && strings.Contains(r.err, "https://other.example.com") && strings.Contains(r.err, e.URL)
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
	e := newHub(t, testenv.Options{})
	useHub(t, "team", e.URL, e.AdminToken)
	saveCreds(t, conn("gpu", "https://other.example.com", "b-9"))
	r := runCLI(t, "", "runtime-broker", "deregister")
	if r.code != 1 || !strings.Contains(r.err, "error: runtime_broker_not_found: ") {
		t.Errorf("%+v", r)
	}
	if len(loadCreds(t).Connections) != 1 {
		t.Error("connection removed after a failed deregistration")
	}
}
