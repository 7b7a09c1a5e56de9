package docker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/runtime/docker"
)

// greeting dials a published port and reads the test agent's greeting.
func greeting(port int) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}

// TestPoolPortAnswers: through the Hub and a real broker on this engine,
// an agent's published port comes from the broker's pool and answers on
// the host; with the pool used up the next create fails with
// port_pool_exhausted and leaves no container; a stop unbinds the port
// and a delete leaves nothing.
func TestPoolPortAnswers(t *testing.T) {
	needEngine(t)
	ctx := testCtx(t)
	e := testenv.New(t, testenv.Options{})
	if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "ports", SharingMode: api.SharingEmptyPerAgent}); err != nil {
		t.Fatal(err)
	}
	creds, err := e.Hub.RegisterBroker(ctx, "docker-ports", hub.BootstrapAdminID, false)
	if err != nil {
		t.Fatal(err)
	}
	rt := newBrokerRuntime(t, docker.Options{Client: engine, ScionBinary: agentBin, BrokerID: creds.BrokerID})
	port := freePort(t) // a one-port pool: exhausted by the first agent
	b, err := broker.New(broker.Config{HubEndpoint: e.URL, BrokerID: creds.BrokerID, Name: "docker-ports",
		Secret: []byte(creds.Secret), Runtime: rt, DataDir: filepath.Join(t.TempDir(), "broker"),
		Logger: slog.New(slog.DiscardHandler), PortRange: [2]int{port, port}})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.WaitBrokerStatus(creds.BrokerID, api.BrokerOnline)
	if _, err := e.Admin.ProvideProject(ctx, creds.BrokerID, "ports"); err != nil {
		t.Fatal(err)
	}

	req := api.CreateAgentRequest{Name: "web", Project: "ports", Image: testImage, Start: true, Ports: []int{8080},
		Command: []string{agentPath, "serve", "port-marker", "-listen", ":8080"}}
	web, err := e.Admin.CreateAgent(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(web.Ports) != 1 || web.Ports[0].HostPort != port || web.Ports[0].ContainerPort != 8080 {
		t.Fatalf("agent ports %+v, want 8080 on the pool's %d", web.Ports, port)
	}
	wait.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		s, err := greeting(port)
		if !strings.HasPrefix(s, "hello port-marker") {
			return fmt.Errorf("the published port answered %q (%v), want hello port-marker", s, err)
		}
		return nil
	})

	req.Name = "web2"
	_, err = e.Admin.CreateAgent(ctx, req)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodePortPoolExhausted || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("second create: %v, want 503 port_pool_exhausted", err)
	}
	web2, err := e.Admin.GetAgent(ctx, "web2", "ports")
	if err != nil || web2.Phase != api.PhaseError || !strings.Contains(web2.StatusMessage, "port pool exhausted") {
		t.Fatalf("web2 = %+v (%v)", web2, err)
	}
	if cs := engineContainers(t, web2.ID); len(cs) != 0 {
		t.Fatalf("exhausted create left %d containers", len(cs))
	}

	if web, err = e.Admin.AgentAction(ctx, "web", "ports", "stop"); err != nil || len(web.Ports) != 0 {
		t.Fatalf("stop: %+v (%v)", web, err)
	}
	if s, err := greeting(port); err == nil {
		t.Fatalf("stopped agent's port still answers: %q", s)
	}
	for _, name := range []string{"web", "web2"} {
		if err := e.Admin.DeleteAgent(ctx, name, "ports"); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if cs := engineContainers(t, web.ID); len(cs) != 0 {
		t.Fatalf("delete left %d containers", len(cs))
	}
}
