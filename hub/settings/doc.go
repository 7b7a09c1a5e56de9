// Package settings holds the Hub's settings (agent defaults, experiments)
// and limits: their one writer, their cache, and their routes.
//
// They are read on every create, so they are cached in memory and
// refreshed on every write through this Hub. The cache is the Hub's: it
// is filled as the system (hub/authstore), whoever's request needs it
// first, since a caller that may not read the settings (a token) still
// has its create decided by them. The routes that answer the settings
// check hub.read themselves, and GET /settings reads them again as its
// caller.
//
// TODO(multi-replica): with several Hub replicas on one PostgreSQL, a
// write on one replica is seen by the others only after their restart;
// a LISTEN/NOTIFY invalidation belongs here then.
//
// It imports only api, hub/authstore (the setting keys it opens to
// requests), hub/authz, hub/httpapi, hub/storeerr and store: the Hub
// builds it over its authorizing store and reads it; it reaches no
// other part of the Hub.
package settings
