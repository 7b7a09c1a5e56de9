package hub_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
)

// metricValue is the value of the sample named by name and labels (as
// in the exposition, e.g. `scion_agents{phase="running"}`), or -1.
func sampleValue(body, sample string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestMetricsOfTheHubsState: /metrics counts agents by phase, each
// broker's running agents, limit and liveness, commands queued for an
// offline broker, create latency, channel round trips and reconnects,
// all read from what the Hub holds.
func TestMetricsOfTheHubsState(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 2, HeartbeatInterval: 50 * time.Millisecond, Grace: 2 * time.Second})
	ctx := context.Background()
	if _, err := e.Admin.PutLimits(ctx, api.Limits{MaxAgentsPerBroker: 7}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"m1", "m2", "m3"} {
		if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: n, Project: "default", Broker: "b1", Start: true, Command: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Admin.AgentAction(ctx, "m3", "default", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "q1", Project: "default", Broker: "b2", Start: true, Command: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	// b2 goes offline: a stop for its agent is queued.
	b2 := e.Brokers()[1]
	rt := b2.Runtime
	e.StopBroker(b2)
	e.WaitBrokerStatus(e.Brokers()[1].ID, api.BrokerOffline)
	if _, err := e.Admin.AgentAction(ctx, "q1", "default", "stop"); err != nil {
		t.Fatal(err)
	}
	var body string
	wait.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		status, b, _ := getMetrics(t, e, e.AdminToken)
		if status != http.StatusOK {
			t.Fatalf("/metrics: %d", status)
		}
		body = b
		if sampleValue(body, "scion_broker_channel_rtt_seconds_count") <= 0 {
			return errString("no heartbeat round trip measured yet")
		}
		return nil
	})
	for sample, want := range map[string]float64{
		`scion_agents{phase="running"}`:                           2, // m1, m2
		`scion_agents{phase="stopped"}`:                           2, // m3, and q1 (stop_queued)
		`scion_agents{phase="error"}`:                             0,
		`scion_broker_running_agents{broker="b1"}`:                2,
		`scion_broker_max_agents{broker="b1"}`:                    7,
		`scion_broker_online{broker="b1"}`:                        1,
		`scion_broker_online{broker="b2"}`:                        0,
		`scion_dispatches_pending{broker="b2"}`:                   1,
		`scion_dispatches_pending{broker="b1"}`:                   0,
		`scion_agent_create_duration_seconds_count{outcome="ok"}`: 4,
		`scion_state_scrape_errors`:                               0,
	} {
		if got := sampleValue(body, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
	if !strings.Contains(body, "scion_broker_reconnects_total") {
		t.Error("no reconnect counter")
	}
	// b2 back: its channel is a reconnect.
	e.StartBroker(b2, rt)
	e.WaitBrokerStatus(e.Brokers()[1].ID, api.BrokerOnline)
	_, body, _ = getMetrics(t, e, e.AdminToken)
	if got := sampleValue(body, "scion_broker_reconnects_total"); got < 1 {
		t.Errorf("scion_broker_reconnects_total = %v after b2 came back", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
