package broker

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker/idempotency"
	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/fake"
	"github.com/scion-go/scion/wire"
)

func TestFileStoreIsTheDefault(t *testing.T) {
	hub := newTestHub(t)
	b, err := New(Config{HubEndpoint: hub.srv.URL, BrokerID: hub.brokerID, Secret: hub.secret, Runtime: fake.New(),
		DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.cfg.Idempotency.(*idempotency.FileStore); !ok {
		t.Fatalf("default idempotency store is %T", b.cfg.Idempotency)
	}
	if _, err := os.Stat(filepath.Join(b.cfg.DataDir, "idempotency", idempotency.FileName)); err != nil {
		t.Fatal(err)
	}
}

// TestKeyedCreateReplayAfterBrokerRestart: the Hub's create reached the
// broker, the broker restarted before the acknowledgement got back, and
// the Hub replays the create with the same key to the new process over
// the same data directory. It gets the original answer; the runtime saw
// one create.
func TestKeyedCreateReplayAfterBrokerRestart(t *testing.T) {
	hub := newTestHub(t)
	rt := fake.New()
	dir := t.TempDir()
	run := func(rt *fake.Runtime) (stop func()) {
		b, err := New(Config{HubEndpoint: hub.srv.URL, BrokerID: hub.brokerID, Name: "test", Secret: hub.secret,
			Runtime: rt, DataDir: dir, Version: "test", Logger: slog.New(slog.DiscardHandler),
			MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		waitConnected(t, b)
		return func() { cancel(); <-done }
	}
	stop := run(rt)
	sp := spec("a1")
	sp.Start = true
	key := wire.WithKey("create:run-1")
	var first wire.AgentStatus
	if err := hub.call(wire.MethodAgentCreate, sp, &first, key); err != nil {
		t.Fatal(err)
	}
	stop()
	recv(t, hub.hellos, "first hello")

	stop = run(rt.Restart())
	defer stop()
	recv(t, hub.hellos, "hello after the restart")
	var replay wire.AgentStatus
	if err := hub.call(wire.MethodAgentCreate, sp, &replay, key); err != nil {
		t.Fatalf("replay after restart: %v", err)
	}
	if replay.AgentID != "a1" || replay.State != runtime.StateRunning || replay.ObservedAt != first.ObservedAt {
		t.Fatalf("replay answered %+v, want the original %+v", replay, first)
	}
	if n := rt.Calls("Create"); n != 1 {
		t.Fatalf("runtime saw %d creates, want 1", n)
	}
	inv, err := rt.Inventory(t.Context())
	if err != nil || len(inv) != 1 {
		t.Fatalf("inventory %v %v, want one container", inv, err)
	}
	// The same create without a key is a new request, refused as a
	// duplicate: the key is what made the replay safe.
	err = hub.call(wire.MethodAgentCreate, sp, nil)
	if !api.IsCode(err, api.CodeAlreadyExists) {
		t.Fatalf("unkeyed second create: %v", err)
	}
}
