package system

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// startHubUmask0 starts the Hub process with umask 000, so that any file
// it does not create with an explicit mode comes out world-readable.
func startHubUmask0(t *testing.T, hp *hubProc) *Proc {
	t.Helper()
	return StartProc(t, hp.host.logs, "hub", hp.host.env(), "/bin/sh",
		append([]string{"-c", `umask 000; exec "$0" "$@"`, scionBin}, hp.args...)...)
}

// TestHubCredentialFiles (issue 12, items 6 and 7) against the real
// process: with a umask of 000 the Hub's database, its WAL and SHM files
// and its secrets key file are 0600; an agent token minted before a Hub
// restart over the same database and key file still works after it; and
// a database or key file that others can read stops the Hub at start
// with the chmod that fixes it.
func TestHubCredentialFiles(t *testing.T) {
	t.Parallel()
	requireBinary(t)
	h := newHost(t, "workstation")
	port := FreePort(t)
	hp := &hubProc{host: h, URL: fmt.Sprintf("http://127.0.0.1:%d", port),
		args: append([]string{"server", "start", "--workstation", "--runtime", "fake", "--listen", fmt.Sprintf("127.0.0.1:%d", port)}, hbFlags...)}
	hp.proc = startHubUmask0(t, hp)
	waitReady(t, hp.URL, hp.proc, 15*time.Second)
	ws := readWorkstation(t, h)
	cl := client.New(hp.URL, ws.AdminToken)
	waitLocalBrokerOnline(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := cl.CreateAgent(ctx, api.CreateAgentRequest{Name: "a", Project: "default", Start: true, Command: []string{"sleep", "3600"}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := cl.Exec(ctx, a.ID, "", api.ExecRequest{Command: []string{"env", api.EnvAgentToken}}, &out, nil); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out.String())
	if _, err := client.New(hp.URL, tok).Whoami(ctx); err != nil {
		t.Fatalf("the agent token: %v", err)
	}

	db := filepath.Join(h.home, "hub.db")
	key := filepath.Join(h.home, "hub-secrets.key")
	for _, p := range []string{db, db + "-wal", db + "-shm", key} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o under umask 000, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}

	stop := func() {
		hp.proc.Signal(t, syscall.SIGTERM)
		hp.proc.WaitExit(t, 20*time.Second)
	}
	stop()
	hp.proc = startHubUmask0(t, hp)
	waitReady(t, hp.URL, hp.proc, 15*time.Second)
	if _, err := client.New(hp.URL, tok).Whoami(ctx); err != nil {
		t.Fatalf("the agent token after a Hub restart over the same database and key file: %v", err)
	}
	if _, err := client.New(hp.URL, tok).RefreshAgentToken(ctx); err != nil {
		t.Fatalf("renewing it after the restart: %v", err)
	}
	stop()

	for _, p := range []string{db, key} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		proc := startHubUmask0(t, hp)
		proc.WaitExit(t, 20*time.Second)
		if proc.ExitErr() == nil {
			t.Fatalf("the Hub started with %s mode 0644", filepath.Base(p))
		}
		if logs := proc.Logs(); !strings.Contains(logs, "chmod 600 "+p) {
			t.Errorf("the refusal for %s does not give the fix:\n%s", filepath.Base(p), logs)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
