package launch

import (
	"cmp"
	"log/slog"

	"github.com/scion-go/scion/config"
)

// hubListenAndDB picks the Hub's listen address and database: the flag
// when given, else server.hub.listen / server.hub.db of settings.yaml,
// else config.DefaultHubListen and <scion home>/hub.db. A "~/" at the start
// of a database path is the user's home.
func hubListenAndDB(flagListen, flagDB string, s config.HubSettings) (listen, dsn string) {
	listen = cmp.Or(flagListen, s.Listen, config.DefaultHubListen)
	dsn = cmp.Or(flagDB, expandHome(s.DB), config.Path("hub.db"))
	return listen, dsn
}

// hubTLSFiles is the Hub's certificate and key: each flag over its
// server.hub.tls key. Both or neither: a certificate without its key (or
// the reverse) is a usage error, as is TLS on the workstation Hub, which
// listens on loopback only.
func hubTLSFiles(flagCert, flagKey string, s config.HubSettings, workstation bool) (cert, key string, err error) {
	var set config.HubTLS
	if s.TLS != nil {
		set = *s.TLS
	}
	cert = cmp.Or(flagCert, expandHome(set.CertFile))
	key = cmp.Or(flagKey, expandHome(set.KeyFile))
	switch {
	case cert == "" && key == "":
		return "", "", nil
	case cert == "" || key == "":
		return "", "", usageErrorf("TLS needs both a certificate and its key: --tls-cert and --tls-key (or server.hub.tls.cert_file and key_file)")
	case workstation:
		return "", "", usageErrorf("--workstation serves on loopback without TLS; drop --tls-cert/--tls-key (or server.hub.tls) or run a team Hub with --enable-hub")
	}
	return cert, key, nil
}

// warnSettings logs each unknown key of settings.yaml (a typo that would
// otherwise silently fall back to a default) with the nearest known key.
func warnSettings(log *slog.Logger, s *config.Settings) {
	for _, w := range s.Warnings {
		log.Warn("settings.yaml: "+w, "file", config.SettingsPath())
	}
}
