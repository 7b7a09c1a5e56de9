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

// warnSettings logs each unknown key of settings.yaml (a typo that would
// otherwise silently fall back to a default) with the nearest known key.
func warnSettings(log *slog.Logger, s *config.Settings) {
	for _, w := range s.Warnings {
		log.Warn("settings.yaml: "+w, "file", config.SettingsPath())
	}
}
