package system

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	_ "modernc.org/sqlite" // the Hub's database, opened as an operator's sqlite3 would

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/wait"
)

// The flat Runtime Brokers' system tests (flat_brokers_test.go): one
// broker process hosting a Docker and a Kubernetes instance of
// server.broker.instances, a team Hub, and an operator who edits the
// Hub's database behind its back.

// writeInstances sets server.broker.instances (and, when kubeconfig is
// not "", server.broker.kubernetes.kubeconfig) in the host's
// settings.yaml, keeping whatever register wrote there.
func writeInstances(t *testing.T, h *host, kubeconfig string, instances ...config.Instance) {
	t.Helper()
	path := filepath.Join(h.home, "settings.yaml")
	var s config.Settings
	if b, err := os.ReadFile(path); err == nil {
		if err := yaml.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
	}
	// The list as settings.yaml holds it: config reads it, nothing in
	// the product writes one.
	b, err := yaml.Marshal(instances)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &s.Server.Broker.Instances); err != nil {
		t.Fatal(err)
	}
	if kubeconfig != "" {
		if s.Server.Broker.Extra == nil {
			s.Server.Broker.Extra = map[string]any{}
		}
		s.Server.Broker.Extra["kubernetes"] = map[string]any{"kubeconfig": kubeconfig}
	}
	out, err := yaml.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// dockerInstance and kubeInstance are server.broker.instances entries.
func dockerInstance(key string) config.Instance {
	return config.Instance{Key: key, Name: key, RuntimeTarget: config.RuntimeTargetSettings{Type: config.TargetDocker}}
}

func kubeInstance(key, kubeContext, ns string) config.Instance {
	return config.Instance{Key: key, Name: key,
		RuntimeTarget: config.RuntimeTargetSettings{Type: config.TargetKubernetes, Context: kubeContext, Namespace: ns}}
}

// instanceRegistration is the part of `runtime-broker register --instance
// -o json` the tests check.
type instanceRegistration struct {
	registration
	Instance      string            `json:"instance"`
	RuntimeTarget api.RuntimeTarget `json:"runtimeTarget"`
}

// registerInstance registers the instance with key on the host's current
// Hub and makes it provide for project; it returns the broker ID.
func registerInstance(t *testing.T, h *host, key, project string) string {
	t.Helper()
	var reg instanceRegistration
	h.mustScionJSON(t, &reg, "runtime-broker", "register", "--instance", key)
	if reg.BrokerID == "" || reg.Instance != key {
		t.Fatalf("register --instance %s: %+v; want a broker ID for that instance", key, reg)
	}
	h.mustScion(t, "runtime-broker", "provide", "--project", project, "--name", reg.Name)
	return reg.BrokerID
}

// enableFlatBrokers turns hub.flat_runtime_brokers on as an admin does,
// and checks that the Hub's settings say so.
func enableFlatBrokers(t *testing.T, admin *host, hubURL, token string) {
	t.Helper()
	admin.mustScion(t, "hub", "settings", "set", "--experiment", api.ExperimentFlatRuntimeBrokers+"=on")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.New(hubURL, token).GetSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Experiments[api.ExperimentFlatRuntimeBrokers] {
		t.Fatalf("after scion hub settings set --experiment, the Hub's experiments are %v", s.Experiments)
	}
}

// instanceStatusRow is one flat instance of `runtime-broker status -o json`.
type instanceStatusRow struct {
	Key           string            `json:"key"`
	Name          string            `json:"name"`
	BrokerID      string            `json:"brokerId"`
	RuntimeTarget api.RuntimeTarget `json:"runtimeTarget"`
	State         string            `json:"state"`
}

// instancesOnline waits until the Hub lists every broker of want online
// with the runtime target want gives it, by name.
func instancesOnline(t *testing.T, admin *host, want map[string]api.RuntimeTarget) map[string]api.RuntimeBroker {
	t.Helper()
	var got map[string]api.RuntimeBroker
	wait.Eventually(t, 30*time.Second, pollInterval, func() error {
		m, err := admin.brokers()
		if err != nil {
			return err
		}
		for name, target := range want {
			b, ok := m[name]
			switch {
			case !ok:
				return fmt.Errorf("broker %s not listed: %v", name, statusSummary(m))
			case b.Status != api.BrokerOnline:
				return fmt.Errorf("broker %s is %s: %v", name, b.Status, statusSummary(m))
			case b.RuntimeTarget == nil || *b.RuntimeTarget != target:
				return fmt.Errorf("broker %s has runtimeTarget %+v, want %+v", name, b.RuntimeTarget, target)
			}
		}
		got = m
		return nil
	})
	return got
}

// hubDB is the Hub's SQLite database as an operator with sqlite3 sees it:
// edits go behind the Hub's back, straight into the tables.
type hubDB struct{ path string }

// agentRow is what the placement checks read from an agent's row.
type agentRow struct {
	BrokerID, Pin, Phase, ContainerStatus string
}

func (d hubDB) open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", d.path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// agent reads agent id's row.
func (d hubDB) agent(t *testing.T, id string) agentRow {
	t.Helper()
	db := d.open(t)
	defer db.Close()
	var r agentRow
	var pin sql.NullString
	err := db.QueryRow(`SELECT broker_id, pinned_runtime_target, phase, container_status FROM agents WHERE id = ?`, id).
		Scan(&r.BrokerID, &pin, &r.Phase, &r.ContainerStatus)
	if err != nil {
		t.Fatalf("read agent %s from %s: %v", id, d.path, err)
	}
	r.Pin = pin.String
	return r
}

// reservation is the broker agent id holds its capacity slot on, "" for
// none.
func (d hubDB) reservation(t *testing.T, id string) string {
	t.Helper()
	db := d.open(t)
	defer db.Close()
	var b string
	err := db.QueryRow(`SELECT broker_id FROM reservations WHERE agent_id = ?`, id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatalf("read agent %s's reservation from %s: %v", id, d.path, err)
	}
	return b
}

// setPlacement writes agent id's broker_id and pinned_runtime_target (a
// JSON text, as the Hub stores it).
func (d hubDB) setPlacement(t *testing.T, id, brokerID, pin string) {
	t.Helper()
	db := d.open(t)
	defer db.Close()
	res, err := db.Exec(`UPDATE agents SET broker_id = ?, pinned_runtime_target = ? WHERE id = ?`, brokerID, pin, id)
	if err != nil {
		t.Fatalf("edit agent %s in %s: %v", id, d.path, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("edit agent %s: %d rows changed", id, n)
	}
}

// brokerTarget reads broker id's runtime_target ("null" for none).
func (d hubDB) brokerTarget(t *testing.T, id string) string {
	t.Helper()
	db := d.open(t)
	defer db.Close()
	var v sql.NullString
	if err := db.QueryRow(`SELECT runtime_target FROM runtime_brokers WHERE id = ?`, id).Scan(&v); err != nil {
		t.Fatalf("read broker %s from %s: %v", id, d.path, err)
	}
	if !v.Valid {
		return "null"
	}
	return v.String
}

// setBrokerTarget writes broker id's runtime_target: a JSON text, or
// "null" for NULL (a broker that is not flat).
func (d hubDB) setBrokerTarget(t *testing.T, id, target string) {
	t.Helper()
	db := d.open(t)
	defer db.Close()
	v := sql.NullString{String: target, Valid: target != "null"}
	res, err := db.Exec(`UPDATE runtime_brokers SET runtime_target = ? WHERE id = ?`, v, id)
	if err != nil {
		t.Fatalf("edit broker %s in %s: %v", id, d.path, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("edit broker %s: %d rows changed", id, n)
	}
}

// targetJSON is a runtime target as the runtime_brokers table holds it.
func targetJSON(t *testing.T, target api.RuntimeTarget) string {
	t.Helper()
	b, err := json.Marshal(target)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pinJSON is a pin as the agents table holds it.
func pinJSON(t *testing.T, brokerID string, target api.RuntimeTarget) string {
	t.Helper()
	b, err := json.Marshal(api.PinnedRuntimeTarget{BrokerID: brokerID, RuntimeTarget: target})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// placementOps are the operations of the spec's list ("Inconsistent agent
// placement") that the CLI has, for agent name: each reaches the agent's
// broker, so each must be refused before anything is sent. -o json goes
// before an exec's "--".
func placementOps(name string) [][]string {
	return [][]string{
		{"start", name, "-o", "json"},
		{"restart", name, "-o", "json"},
		{"stop", name, "-o", "json"},
		{"suspend", name, "-o", "json"},
		{"resume", name, "-o", "json"},
		{"delete", name, "-o", "json"},
		{"delete", name, "--force", "-o", "json"},
		{"logs", name, "-o", "json"},
		{"exec", name, "-o", "json", "--", "true"},
		{"attach", name, "-o", "json"},
	}
}

// assertRefused runs every placement operation on agent name and checks
// each exits non-zero with the JSON error of code on stderr and nothing
// on stdout.
func assertRefused(t *testing.T, admin *host, name, code string) {
	t.Helper()
	for _, op := range placementOps(name) {
		start := time.Now()
		// An empty stdin: an attach that got through would detach at once.
		stdout, stderr, rc, err := admin.scionCode(strings.NewReader(""), op...)
		if err != nil {
			t.Errorf("scion %s: %v", strings.Join(op, " "), err)
			continue
		}
		// -o json: the error is JSON on stderr.
		if rc == 0 || !strings.Contains(stderr, `"code": "`+code+`"`) || strings.TrimSpace(stdout) != "" {
			t.Errorf("scion %s: exit %d, stdout %q, stderr %q; want a non-zero exit and the JSON error %s", strings.Join(op, " "), rc, stdout, stderr, code)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("scion %s took %v to be refused", strings.Join(op, " "), d)
		}
	}
}

// assertReadable checks that the reads still answer for the agent: the
// Hub's GET by ID and `scion list`, both with the record as forged
// (phase unchanged).
func assertReadable(t *testing.T, admin *host, hubURL, token string, a api.Agent, wantBroker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := client.New(hubURL, token).GetAgent(ctx, a.ID, "")
	if err != nil {
		t.Errorf("get agent %s: %v", a.Slug, err)
	} else if got.Phase != a.Phase || got.BrokerID != wantBroker {
		t.Errorf("get agent %s: phase %s on broker %s, want %s on %s", a.Slug, got.Phase, got.BrokerID, a.Phase, wantBroker)
	}
	m, err := admin.agentsBySlug()
	if err != nil {
		t.Errorf("scion list: %v", err)
	} else if l, ok := m[a.Slug]; !ok || l.Phase != a.Phase {
		t.Errorf("scion list: agent %s is %+v (listed %v), want phase %s", a.Slug, l, ok, a.Phase)
	}
}
