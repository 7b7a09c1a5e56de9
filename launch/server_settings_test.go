package launch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/internal/wait"
)

func TestHubListenAndDB(t *testing.T) {
	t.Setenv("SCION_HOME", "/scion-home")
	home, _ := os.UserHomeDir()
	for _, tc := range []struct {
		name, flagListen, flagDB string
		s                        config.HubSettings
		listen, db               string
	}{
		{"defaults", "", "", config.HubSettings{}, "127.0.0.1:8780", "/scion-home/hub.db"},
		{"settings", "", "", config.HubSettings{Listen: "0.0.0.0:9000", DB: "postgres://h/db"}, "0.0.0.0:9000", "postgres://h/db"},
		{"flags win", "127.0.0.1:1", "/f.db", config.HubSettings{Listen: "0.0.0.0:9000", DB: "/s.db"}, "127.0.0.1:1", "/f.db"},
		{"home in db path", "", "", config.HubSettings{DB: "~/scion/hub.db"}, "127.0.0.1:8780", filepath.Join(home, "scion/hub.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, d := hubListenAndDB(tc.flagListen, tc.flagDB, tc.s)
			if l != tc.listen || d != tc.db {
				t.Fatalf("got %s %s, want %s %s", l, d, tc.listen, tc.db)
			}
		})
	}
}

func TestWarnSettingsLogsEachUnknownKey(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	warnSettings(log, &config.Settings{Warnings: config.UnknownKeys([]byte("server:\n  broker:\n    runtme: fake\n"))})
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "runtme (line 3): unknown key; did you mean runtime?") {
		t.Fatalf("logged %q", out)
	}
}

// A Hub started with no --listen and --db (scion server start
// --enable-hub) listens on server.hub.listen and opens server.hub.db of
// settings.yaml.
func TestServerStartReadsHubListenAndDB(t *testing.T) {
	home := setHome(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db := filepath.Join(home, "elsewhere", "team.db")
	settings := "server:\n  hub:\n    listen: " + addr + "\n    db: " + db + "\n"
	if err := os.WriteFile(config.SettingsPath(), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Server(ctx, config.ServerOptions{LogLevel: "error", Limits: config.DefaultServeLimits(), AgentTokenTTL: time.Hour})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("the Hub did not stop")
		}
	}()
	wait.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("the Hub ended (%v) before answering on %s", err, addr)
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return fmt.Errorf("no Hub answering on server.hub.listen %s: %w", addr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the Hub on server.hub.listen %s answers /readyz %s", addr, resp.Status)
		}
		return nil
	})
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("server.hub.db %s was not used: %v", db, err)
	}
	if _, err := os.Stat(config.Path("hub.db")); err == nil {
		t.Fatal("the default database was created although server.hub.db is set")
	}
}
