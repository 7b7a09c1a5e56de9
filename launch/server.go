package launch

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/hub"
	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/store/postgres"
	"github.com/scion-go/scion/store/sqlite"
)

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

// Server runs a Hub from the flags of `scion server start` until ctx ends
// or SIGINT or SIGTERM arrives: it opens the store, loads the secrets key,
// listens, and with o.Workstation registers and runs the local broker and
// writes workstation.json (removed at the end); a team Hub writes its first
// admin token to a 0600 file instead.
func Server(parent context.Context, o config.ServerOptions) error {
	f := &o
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := newLogger(f.LogLevel, f.LogFormat)
	settings, err := config.LoadSettings()
	if err != nil {
		return err
	}
	warnSettings(log, settings)
	f.Listen, f.DB = hubListenAndDB(f.Listen, f.DB, settings.Server.Hub)
	if f.Workstation {
		host, _, err := net.SplitHostPort(f.Listen)
		if err != nil || !net.ParseIP(host).IsLoopback() {
			return usageErrorf("--workstation listens on loopback only; --listen (or server.hub.listen) must be 127.0.0.1:PORT")
		}
	}
	tlsCert, tlsKey, err := hubTLSFiles(f.TLSCert, f.TLSKey, settings.Server.Hub, f.Workstation)
	if err != nil {
		return err
	}
	var certs *transport.CertReloader
	if tlsCert != "" {
		// Loaded before anything else starts: a bad pair stops the Hub
		// with the files named, rather than failing every handshake.
		if certs, err = transport.NewCertReloader(tlsCert, tlsKey, log); err != nil {
			return err
		}
	}
	oidcCfg, err := oidcConfig(f.OIDC)
	if err != nil {
		return err
	}
	dsn := f.DB
	st, err := openStore(ctx, dsn)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()
	secretsKey, err := loadSecretsKey(f.SecretsKeyFile)
	if err != nil {
		return err
	}
	srv, err := hub.New(ctx, hub.Options{Store: st, Logger: log, Version: f.Version, HeartbeatInterval: f.HeartbeatInterval, Grace: f.HeartbeatGrace, OIDC: oidcCfg,
		SecretsKey: secretsKey, AgentTokenTTL: f.AgentTokenTTL, AccessLog: !f.NoAccessLog})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another Hub running? stop it or pass --listen)", f.Listen, err)
	}
	scheme := "http://"
	if certs != nil {
		scheme = "https://"
	}
	url := scheme + ln.Addr().String()
	srv.SetPublicURL(url)
	// Everything a client needs (the workstation file with its token, the
	// first admin token) is in place before the Hub answers /readyz.
	var runBrokers func(context.Context)
	if f.Workstation {
		runBrokers, err = startWorkstation(ctx, srv, url, f, log)
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
	limits, err := serveLimits(f.Limits)
	if err != nil {
		_ = ln.Close()
		srv.Close()
		return err
	}
	hs, limited := transport.NewHTTPServer(srv.Handler(), ln, limits, log)
	srv.WatchConnections(limited)
	serveErr := make(chan error, 1)
	if certs != nil {
		hs.TLSConfig = transport.ServerTLSConfig(certs)
		// A non-nil empty map: no HTTP/2 (see ServerTLSConfig).
		hs.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		go func() { serveErr <- hs.ServeTLS(limited, "", "") }()
	} else {
		go func() { serveErr <- hs.Serve(limited) }()
	}
	brokerDone := make(chan struct{})
	if runBrokers != nil {
		go func() { defer close(brokerDone); runBrokers(ctx) }()
	} else {
		close(brokerDone)
	}
	log.Info("hub listening", "url", url, "tls", certs != nil, "database", redactDSN(dsn), "workstation", f.Workstation,
		"max_connections", limits.MaxConns, "max_connections_per_address", limits.MaxConnsPerAddr,
		"max_connections_per_caller", limits.MaxConnsPerCaller)
	if oidcCfg != nil {
		log.Info("oidc sign-in on", "issuer", oidcCfg.IssuerURL, "clientId", oidcCfg.ClientID, "defaultRole", orDash(oidcCfg.DefaultRole))
	}
	fmt.Fprintf(os.Stderr, "Scion Hub ready at %s (web page: %s/ui/)\n", url, url)

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
