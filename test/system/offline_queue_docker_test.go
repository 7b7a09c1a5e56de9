package system

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/scion-go/scion/runtime/docker"
)

// TestQueuedStopsAcrossDockerNetworkCut is TestQueuedStopsAcrossBrokerCut
// with a real network cut: the broker (fake runtime) runs in a container
// of an image built FROM scratch with the scion binary, on a bridge
// network the test creates; the Hub listens only on that network's gateway
// address, so all Hub-broker traffic is on that network (and the test's
// own calls to the gateway address from the host). The cut is `docker
// network disconnect` of the broker's container, the heal `docker network
// connect`: the broker process keeps running with its containers, its
// connection just stops carrying packets.
func TestQueuedStopsAcrossDockerNetworkCut(t *testing.T) {
	cl := requireDocker(t)
	t.Parallel()
	ctx := context.Background()
	suffix := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1_000_000)

	tag := "scion-systest-broker:" + suffix
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := docker.BuildScratchImage(bctx, cl, tag, scionBin, nil)
	cancel()
	if err != nil {
		t.Fatalf("build the broker image FROM scratch: %v", err)
	}
	t.Cleanup(func() {
		_, _ = cl.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})

	netName := "scion-cut-" + suffix
	nc, err := cl.NetworkCreate(ctx, netName, network.CreateOptions{Driver: "bridge",
		Labels: map[string]string{"scion.systest": "offline-queue"}})
	if err != nil {
		t.Fatalf("create network %s: %v", netName, err)
	}
	t.Cleanup(func() { _ = cl.NetworkRemove(context.Background(), nc.ID) })
	ni, err := cl.NetworkInspect(ctx, nc.ID, network.InspectOptions{})
	if err != nil || len(ni.IPAM.Config) == 0 || ni.IPAM.Config[0].Gateway == "" {
		t.Fatalf("inspect network %s: %v %+v", netName, err, ni.IPAM)
	}
	gw := ni.IPAM.Config[0].Gateway

	// The Hub on the gateway address only.
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatalf("bind the network's gateway %s: %v", gw, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	hh := newHost(t, "hub")
	hub := &hubProc{host: hh, URL: fmt.Sprintf("http://%s", net.JoinHostPort(gw, fmt.Sprint(port))),
		args: append([]string{"server", "start", "--enable-hub", "--listen", net.JoinHostPort(gw, fmt.Sprint(port)),
			"--db", filepath.Join(hh.home, "hub.db")}, hbFlags...)}
	hub.restart(t)
	token := hub.adminToken(t)
	admin := newHost(t, "admin")
	admin.useHub(t, hub.URL, token)
	admin.mustScion(t, "project", "create", "default")

	// Register the broker from the host, then run it in the container on
	// the same SCION_HOME (bind-mounted).
	bh := newHost(t, "netcut")
	bh.useHub(t, hub.URL, token)
	// The Hub is on the test's own Docker bridge: plain http is allowed
	// there, and saved with the connection for the broker in the container.
	bh.mustScion(t, "runtime-broker", "register", "--name", "netcut", "--insecure-http")
	bh.mustScion(t, "runtime-broker", "provide", "--project", "default")
	cc, err := cl.ContainerCreate(ctx, &container.Config{
		Image:  tag,
		Cmd:    append([]string{"runtime-broker", "start", "--runtime", "fake"}, hbFlags...),
		Env:    []string{"SCION_HOME=/scion-home", "HOME=/user-home"},
		Labels: map[string]string{"scion.systest": "offline-queue"},
	}, &container.HostConfig{
		NetworkMode: container.NetworkMode(netName),
		Binds:       []string{bh.home + ":/scion-home", bh.user + ":/user-home"},
	}, nil, nil, "scion-cut-broker-"+suffix)
	if err != nil {
		t.Fatalf("create the broker container: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("--- broker container logs ---\n" + containerLogs(cl, cc.ID))
		}
		_ = cl.ContainerRemove(context.Background(), cc.ID, container.RemoveOptions{Force: true})
	})
	if err := cl.ContainerStart(ctx, cc.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start the broker container: %v", err)
	}

	connected := true
	queuedStopsScenario(t, hub, admin, token, "netcut", bh, "docker network disconnect",
		func() {
			if err := cl.NetworkDisconnect(ctx, nc.ID, cc.ID, true); err != nil {
				t.Fatalf("docker network disconnect: %v", err)
			}
			connected = false
		},
		func() {
			if err := cl.NetworkConnect(ctx, nc.ID, cc.ID, nil); err != nil {
				t.Fatalf("docker network connect: %v", err)
			}
			connected = true
		})
	if !connected {
		t.Error("the scenario ended with the broker disconnected")
	}
}

// containerLogs returns a container's stdout and stderr.
func containerLogs(cl interface {
	ContainerLogs(context.Context, string, container.LogsOptions) (io.ReadCloser, error)
}, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := cl.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return err.Error()
	}
	defer rc.Close()
	var out, errB bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &errB, rc)
	return errB.String() + out.String()
}
