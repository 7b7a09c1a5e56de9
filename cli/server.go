package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/broker"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/postgres"
	"github.com/scion-go/scion/store/sqlite"
)

// Version is the build's version, set by the linker.
var Version = "dev"

// newServerCmd is `scion server` (start).
func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "server", Short: "Run a Scion Hub (and, with --workstation, a local broker)"}
	cmd.AddCommand(newServerStartCmd())
	return cmd
}

type serverFlags struct {
	workstation bool
	enableHub   bool
	listen      string
	db          string
	runtime     string
	heartbeat   time.Duration
	grace       time.Duration
	logLevel    string
	oidc        oidcFlags
	secretsKey  string
	agentTTL    time.Duration
	serve       hub.ServeLimits
}

func newServerStartCmd() *cobra.Command {
	f := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start a Hub: --workstation (Hub + local broker, loopback, SQLite) or --enable-hub (Hub alone)",
		Long: `Start a Scion Hub.

--workstation runs the Hub and a Runtime Broker in one process, on loopback,
with SQLite under the Scion home (~/.scion). The local CLI finds it with no
set-up: the bootstrap admin token is written to ~/.scion/workstation.json.

--enable-hub runs the Hub alone, for a team. --db takes a PostgreSQL URL
(postgres://...) or a SQLite file path. --listen and --db default to
server.hub.listen and server.hub.db of settings.yaml. On first start the bootstrap admin
token is written to ~/.scion/hub-admin-token (0600), never to the log.`,
		Example: `  scion server start --workstation
  scion server start --enable-hub --listen 0.0.0.0:8780 --db postgres://scion@db/scion`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.workstation == f.enableHub {
				return usageErrorf("choose exactly one of --workstation and --enable-hub")
			}
			if f.agentTTL < time.Minute || f.agentTTL > 30*24*time.Hour {
				return usageErrorf("--agent-token-ttl must be between 1m and 720h")
			}
			return runServer(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.workstation, "workstation", false, "run a Hub and a local Runtime Broker on loopback with embedded SQLite")
	fl.BoolVar(&f.enableHub, "enable-hub", false, "run a Hub alone")
	fl.StringVar(&f.listen, "listen", "", "address to listen on (default: server.hub.listen, else "+defaultHubListen+"; --workstation always stays on loopback)")
	fl.StringVar(&f.db, "db", "", "database: a postgres:// URL or a SQLite file (default: server.hub.db, else <scion home>/hub.db)")
	fl.StringVar(&f.runtime, "runtime", "", "workstation broker runtime: docker, process or fake (default: docker when an engine answers, else process)")
	fl.DurationVar(&f.heartbeat, "heartbeat-interval", 5*time.Second, "control-channel heartbeat interval")
	fl.DurationVar(&f.grace, "heartbeat-grace", 10*time.Second, "silence past a heartbeat before a broker is marked offline")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.oidc.add(fl)
	fl.DurationVar(&f.serve.ReadHeaderTimeout, "read-header-timeout", hub.DefaultReadHeaderTimeout, "longest a client may take to send a request's headers")
	fl.DurationVar(&f.serve.ReadTimeout, "read-timeout", hub.DefaultReadTimeout, "longest a client may take to send a whole request, body included")
	fl.DurationVar(&f.serve.WriteTimeout, "write-timeout", hub.DefaultWriteTimeout, "longest from a request's headers to the end of its answer (streams: logs -f, exec, attach and broker channels are not cut)")
	fl.DurationVar(&f.serve.IdleTimeout, "idle-timeout", hub.DefaultIdleTimeout, "close a keep-alive connection idle this long")
	fl.IntVar(&f.serve.MaxConnsPerAddr, "max-connections-per-address", hub.DefaultMaxConnsPerAddr, "connections one client address (IPv4, or IPv6 /64) may hold open; 0 for no cap (behind a proxy every client has its address)")
	fl.IntVar(&f.serve.MaxConns, "max-connections", hub.DefaultMaxConns, "connections the Hub holds open in all (lowered to fit the file descriptor limit)")
	fl.StringVar(&f.secretsKey, "secrets-key-file", "", "file with the 32-byte key (64 hex digits) that seals Hub secrets and signing keys (default <scion home>/hub-secrets.key, made on first start; must be 0600 or 0400)")
	fl.DurationVar(&f.agentTTL, "agent-token-ttl", api.DefaultAgentTokenTTL, "lifetime of an agent token; the scion CLI inside an agent renews it when half of it is left")
	return cmd
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// openStore opens PostgreSQL for a postgres:// URL, else a SQLite file.
func openStore(ctx context.Context, dsn string) (store.Store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgres.Open(ctx, dsn)
	}
	if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, dsn)
}

func runServer(parent context.Context, f *serverFlags) error {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := newLogger(f.logLevel)
	settings, err := config.LoadSettings()
	if err != nil {
		return err
	}
	warnSettings(log, settings)
	f.listen, f.db = hubListenAndDB(f.listen, f.db, settings.Server.Hub)
	if f.workstation {
		host, _, err := net.SplitHostPort(f.listen)
		if err != nil || !net.ParseIP(host).IsLoopback() {
			return usageErrorf("--workstation listens on loopback only; --listen (or server.hub.listen) must be 127.0.0.1:PORT")
		}
	}
	oidcCfg, err := f.oidc.config()
	if err != nil {
		return err
	}
	dsn := f.db
	st, err := openStore(ctx, dsn)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()
	secretsKey, err := loadSecretsKey(f.secretsKey)
	if err != nil {
		return err
	}
	srv, err := hub.New(ctx, hub.Options{Store: st, Logger: log, Version: Version, HeartbeatInterval: f.heartbeat, Grace: f.grace, OIDC: oidcCfg,
		SecretsKey: secretsKey, AgentTokenTTL: f.agentTTL})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another Hub running? stop it or pass --listen)", f.listen, err)
	}
	url := "http://" + ln.Addr().String()
	srv.SetPublicURL(url)
	// Everything a client needs (the workstation file with its token, the
	// first admin token) is in place before the Hub answers /readyz.
	var b *broker.Broker
	if f.workstation {
		b, err = startWorkstation(ctx, srv, url, f, log)
		if err != nil {
			_ = ln.Close()
			srv.Close()
			return err
		}
		defer config.RemoveWorkstation()
	} else if err := writeAdminTokenOnce(ctx, srv, st); err != nil {
		_ = ln.Close()
		return err
	}
	limits, err := serveLimits(f.serve)
	if err != nil {
		_ = ln.Close()
		srv.Close()
		return err
	}
	hs, limited := hub.NewHTTPServer(srv.Handler(), ln, limits, log)
	srv.WatchConnections(limited)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(limited) }()
	brokerDone := make(chan struct{})
	if b != nil {
		go func() { defer close(brokerDone); _ = b.Run(ctx) }()
	} else {
		close(brokerDone)
	}
	log.Info("hub listening", "url", url, "database", redactDSN(dsn), "workstation", f.workstation,
		"max_connections", limits.MaxConns, "max_connections_per_address", limits.MaxConnsPerAddr)
	if oidcCfg != nil {
		log.Info("oidc sign-in on", "issuer", oidcCfg.IssuerURL, "clientId", oidcCfg.ClientID, "defaultRole", orDash(oidcCfg.DefaultRole))
	}
	fmt.Fprintf(os.Stderr, "Scion Hub ready at %s\n", url)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return err
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Close() // ends broker channels so Shutdown does not wait on them
	_ = hs.Shutdown(shutCtx)
	<-brokerDone
	return nil
}

// writeAdminTokenOnce gives a fresh team Hub its first admin: the token
// goes to a 0600 file, never to the log.
func writeAdminTokenOnce(ctx context.Context, srv *hub.Server, st store.Store) error {
	users, err := st.ListUsers(ctx)
	if err != nil || len(users) > 0 {
		return err
	}
	tok, err := srv.BootstrapAdmin(ctx)
	if err != nil {
		return err
	}
	p := config.Path("hub-admin-token")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bootstrap admin token written to %s\n", p)
	return nil
}

func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "@"); i > 0 && strings.Contains(dsn, "://") {
		return dsn[:strings.Index(dsn, "://")+3] + "***" + dsn[i:]
	}
	return dsn
}
