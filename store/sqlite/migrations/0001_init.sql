-- Initial schema. Times are INTEGER microseconds since the Unix epoch (UTC):
-- compact, fast to compare, and exactly the precision PostgreSQL keeps.
-- JSON columns are TEXT; NULL means a nil Go slice/map. STRICT makes SQLite
-- enforce the declared types like the PostgreSQL schema does.

CREATE TABLE projects (
	id                TEXT    NOT NULL PRIMARY KEY,
	name              TEXT    NOT NULL UNIQUE,
	git_remote        TEXT    NOT NULL DEFAULT '',
	sharing_mode      TEXT    NOT NULL DEFAULT '',
	default_broker_id TEXT    NOT NULL DEFAULT '',
	active_profile    TEXT    NOT NULL DEFAULT '',
	created_at        INTEGER NOT NULL,
	updated_at        INTEGER NOT NULL
) STRICT;

CREATE TABLE runtime_brokers (
	id               TEXT    NOT NULL PRIMARY KEY,
	name             TEXT    NOT NULL UNIQUE,
	status           TEXT    NOT NULL DEFAULT '',
	version          TEXT    NOT NULL DEFAULT '',
	protocol_version INTEGER NOT NULL DEFAULT 0,
	runtime          TEXT    NOT NULL DEFAULT '',
	capabilities     TEXT,
	profiles         TEXT,
	settings         TEXT,
	auto_provide     INTEGER NOT NULL DEFAULT 0,
	secret           BLOB,
	created_by       TEXT    NOT NULL DEFAULT '',
	last_seen        INTEGER,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
) STRICT;

-- Deleting either side removes the link.
CREATE TABLE project_providers (
	project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	broker_id  TEXT NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	PRIMARY KEY (project_id, broker_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX project_providers_broker ON project_providers (broker_id);

-- agents.project_id has no ON DELETE action: DeleteProject refuses while
-- agents remain. broker_id is deliberately not a foreign key: an agent
-- outlives the broker it last ran on (its history stays readable).
CREATE TABLE agents (
	id               TEXT    NOT NULL PRIMARY KEY,
	slug             TEXT    NOT NULL,
	project_id       TEXT    NOT NULL REFERENCES projects (id),
	broker_id        TEXT    NOT NULL DEFAULT '',
	profile          TEXT    NOT NULL DEFAULT '',
	harness          TEXT    NOT NULL DEFAULT '',
	image            TEXT    NOT NULL DEFAULT '',
	command          TEXT,
	env              TEXT,
	phase            TEXT    NOT NULL DEFAULT '',
	status_message   TEXT    NOT NULL DEFAULT '',
	container_status TEXT    NOT NULL DEFAULT '',
	run_id           TEXT    NOT NULL DEFAULT '',
	generation       INTEGER NOT NULL DEFAULT 0,
	generations      TEXT,
	role             TEXT    NOT NULL DEFAULT '',
	created_by       TEXT    NOT NULL DEFAULT '',
	delegator        TEXT    NOT NULL DEFAULT '',
	parent_agent_id  TEXT    NOT NULL DEFAULT '',
	payload          TEXT,
	version          INTEGER NOT NULL,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	UNIQUE (project_id, slug)
) STRICT;
-- (filter, id) indexes serve ListAgents' "WHERE filter AND id > cursor
-- ORDER BY id" pages without a sort.
CREATE INDEX agents_project ON agents (project_id, id);
CREATE INDEX agents_broker ON agents (broker_id, id);

-- One row per agent holding a capacity slot; the agent's or the broker's
-- deletion frees it.
CREATE TABLE reservations (
	agent_id   TEXT    NOT NULL PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
	broker_id  TEXT    NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	created_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX reservations_broker ON reservations (broker_id);

CREATE TABLE users (
	id         TEXT    NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL DEFAULT '',
	email      TEXT    NOT NULL DEFAULT '',
	role       TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL
) STRICT;

-- user_id/agent_id/project_id are not foreign keys: a token names its
-- principal, and the Hub decides what a dangling one means. DeleteAgent
-- removes the agent's tokens explicitly.
CREATE TABLE tokens (
	id         TEXT    NOT NULL PRIMARY KEY,
	hash       BLOB    NOT NULL UNIQUE,
	kind       TEXT    NOT NULL,
	user_id    TEXT    NOT NULL DEFAULT '',
	agent_id   TEXT    NOT NULL DEFAULT '',
	project_id TEXT    NOT NULL DEFAULT '',
	scopes     TEXT,
	name       TEXT    NOT NULL DEFAULT '',
	expires_at INTEGER,
	revoked_at INTEGER,
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX tokens_agent ON tokens (agent_id);

CREATE TABLE join_tokens (
	hash       BLOB    NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL DEFAULT '',
	created_by TEXT    NOT NULL DEFAULT '',
	expires_at INTEGER NOT NULL,
	used_at    INTEGER,
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE settings (
	key   TEXT NOT NULL PRIMARY KEY,
	value BLOB NOT NULL
) STRICT;
