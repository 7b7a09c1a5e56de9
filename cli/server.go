package cli

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// Version is the build's version, set by the linker.
var Version = "dev"

// newServerCmd is `scion server` (start).
func newServerCmd(d Daemons) *cobra.Command {
	cmd := &cobra.Command{Use: "server", Short: "Run a Scion Hub (and, with --workstation, a local broker)"}
	cmd.AddCommand(newServerStartCmd(d))
	return cmd
}

// newServerStartCmd parses the flags into config.ServerOptions and runs
// d.Server with them.
func newServerStartCmd(d Daemons) *cobra.Command {
	f := &config.ServerOptions{Limits: config.DefaultServeLimits()}
	var enableHub, accessLog bool
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
			if f.Workstation == enableHub {
				return usageErrorf("choose exactly one of --workstation and --enable-hub")
			}
			if f.AgentTokenTTL < time.Minute || f.AgentTokenTTL > 30*24*time.Hour {
				return usageErrorf("--agent-token-ttl must be between 1m and 720h")
			}
			if err := checkLogFormat(f.LogFormat); err != nil {
				return err
			}
			if d.Server == nil {
				return errNoDaemon
			}
			f.Version, f.NoAccessLog = Version, !accessLog
			return d.Server(cmd.Context(), *f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.Workstation, "workstation", false, "run a Hub and a local Runtime Broker on loopback with embedded SQLite")
	fl.BoolVar(&enableHub, "enable-hub", false, "run a Hub alone")
	fl.StringVar(&f.Listen, "listen", "", "address to listen on (default: server.hub.listen, else "+config.DefaultHubListen+"; --workstation always stays on loopback)")
	fl.StringVar(&f.DB, "db", "", "database: a postgres:// URL or a SQLite file (default: server.hub.db, else <scion home>/hub.db)")
	fl.StringVar(&f.Runtime, "runtime", "", "workstation broker runtime: docker, process or fake (default: docker when an engine answers, else process)")
	fl.DurationVar(&f.HeartbeatInterval, "heartbeat-interval", 2*time.Second, "control-channel heartbeat interval")
	fl.DurationVar(&f.HeartbeatGrace, "heartbeat-grace", 6*time.Second, "silence past a heartbeat before a broker is marked offline (interval + grace of silence: offline)")
	fl.StringVar(&f.LogLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.LogFormat, "log-format", config.LogFormatText, "log lines as text (key=value) or json (one object per line, for a log pipeline)")
	fl.BoolVar(&accessLog, "access-log", true, "log a line per request: request ID (sent back as X-Request-Id), method, route, status, duration, caller")
	addOIDCFlags(fl, &f.OIDC)
	fl.DurationVar(&f.Limits.ReadHeaderTimeout, "read-header-timeout", f.Limits.ReadHeaderTimeout, "longest a client may take to send a request's headers")
	fl.DurationVar(&f.Limits.ReadTimeout, "read-timeout", f.Limits.ReadTimeout, "longest a client may take to send a whole request, body included")
	fl.DurationVar(&f.Limits.WriteTimeout, "write-timeout", f.Limits.WriteTimeout, "longest from a request's headers to the end of its answer (streams: logs -f, exec, attach and broker channels are not cut)")
	fl.DurationVar(&f.Limits.IdleTimeout, "idle-timeout", f.Limits.IdleTimeout, "close a keep-alive connection idle this long")
	fl.IntVar(&f.Limits.MaxConnsPerAddr, "max-connections-per-address", f.Limits.MaxConnsPerAddr, "connections one client address (IPv4, or IPv6 /64) may hold open; 0 for no cap (behind a proxy every client has its address)")
	fl.IntVar(&f.Limits.MaxConnsPerCaller, "max-connections-per-caller", f.Limits.MaxConnsPerCaller, "requests one signed-in caller (a user with its access tokens, an agent, a broker) may have in progress at once, streams included; the next is answered 429; 0 for no cap")
	fl.DurationVar(&f.Limits.BodyStall, "read-body-timeout", f.Limits.BodyStall, "longest a request body may go without a byte arriving (and the grace before --read-body-min-rate applies); then the connection is closed")
	fl.Int64Var(&f.Limits.BodyMinRate, "read-body-min-rate", f.Limits.BodyMinRate, "slowest average, in bytes per second, a request body may arrive at once --read-body-timeout has passed; 0 for none")
	fl.IntVar(&f.Limits.MaxConns, "max-connections", f.Limits.MaxConns, "connections the Hub holds open in all (lowered to fit the file descriptor limit)")
	fl.StringVar(&f.TLSCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with; reloaded when the file changes (settings: server.hub.tls.cert_file)")
	fl.StringVar(&f.TLSKey, "tls-key", "", "PEM private key of --tls-cert; keep it 0600 (settings: server.hub.tls.key_file)")
	fl.StringVar(&f.SecretsKeyFile, "secrets-key-file", "", "file with the 32-byte key (64 hex digits) that seals Hub secrets and signing keys (default <scion home>/hub-secrets.key, made on first start; must be 0600 or 0400)")
	fl.DurationVar(&f.AgentTokenTTL, "agent-token-ttl", api.DefaultAgentTokenTTL, "lifetime of an agent token; the scion CLI inside an agent renews it when half of it is left")
	return cmd
}

// addOIDCFlags adds the --oidc-* flags. Each overrides its
// server.hub.oidc.* key in settings.yaml. There is no flag for the client
// secret itself: a command line is visible to every user of the host.
func addOIDCFlags(fl *pflag.FlagSet, f *config.OIDCSettings) {
	fl.StringVar(&f.Issuer, "oidc-issuer", "", "OIDC issuer URL; turns on user sign-in (scion hub auth login) through that provider (settings: server.hub.oidc.issuer)")
	fl.StringVar(&f.ClientID, "oidc-client-id", "", "the Hub's client ID at the OIDC provider (settings: server.hub.oidc.client_id)")
	fl.StringVar(&f.ClientSecretFile, "oidc-client-secret-file", "", "file holding the Hub's OIDC client secret, if it has one (settings: server.hub.oidc.client_secret_file)")
	fl.StringVar(&f.DefaultRole, "oidc-default-role", "", "Hub role of a user's first sign-in: viewer, member or admin (default viewer; settings: server.hub.oidc.default_role)")
	fl.StringArrayVar(&f.AdminEmails, "oidc-admin-email", nil, "verified email that gets the admin role at its first sign-in; repeatable (settings: server.hub.oidc.admin_emails)")
}

// checkLogFormat refuses a --log-format the daemons do not write.
func checkLogFormat(f string) error {
	if f != config.LogFormatText && f != config.LogFormatJSON {
		return usageErrorf("invalid --log-format %q: use text or json", f)
	}
	return nil
}
