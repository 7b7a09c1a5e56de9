-- Initial schema. IDs and the columns that reference them use the "C"
-- collation: byte order, the same as SQLite's, so both engines page in the
-- same order whatever the database's locale (and comparisons are cheaper).
-- Times are timestamptz (microsecond precision). Structured columns are
-- jsonb; the agent payload is json, which keeps the caller's bytes exactly.
-- NULL in a JSON column means a nil Go slice/map.

CREATE TABLE projects (
	id                text COLLATE "C" PRIMARY KEY,
	name              text        NOT NULL UNIQUE,
	git_remote        text        NOT NULL DEFAULT '',
	sharing_mode      text        NOT NULL DEFAULT '',
	default_broker_id text        NOT NULL DEFAULT '',
	active_profile    text        NOT NULL DEFAULT '',
	created_at        timestamptz NOT NULL,
	updated_at        timestamptz NOT NULL
);

CREATE TABLE runtime_brokers (
	id               text COLLATE "C" PRIMARY KEY,
	name             text        NOT NULL UNIQUE,
	status           text        NOT NULL DEFAULT '',
	version          text        NOT NULL DEFAULT '',
	protocol_version integer     NOT NULL DEFAULT 0,
	runtime          text        NOT NULL DEFAULT '',
	capabilities     jsonb,
	profiles         jsonb,
	settings         jsonb,
	auto_provide     boolean     NOT NULL DEFAULT false,
	secret           bytea,
	created_by       text        NOT NULL DEFAULT '',
	last_seen        timestamptz,
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL
);

-- Deleting either side removes the link.
CREATE TABLE project_providers (
	project_id text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	broker_id  text COLLATE "C" NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	PRIMARY KEY (project_id, broker_id)
);
CREATE INDEX project_providers_broker ON project_providers (broker_id);

-- agents.project_id has no ON DELETE action: DeleteProject refuses while
-- agents remain. broker_id is deliberately not a foreign key: an agent
-- outlives the broker it last ran on (its history stays readable).
CREATE TABLE agents (
	id               text COLLATE "C" PRIMARY KEY,
	slug             text             NOT NULL,
	project_id       text COLLATE "C" NOT NULL REFERENCES projects (id),
	broker_id        text COLLATE "C" NOT NULL DEFAULT '',
	profile          text             NOT NULL DEFAULT '',
	harness          text             NOT NULL DEFAULT '',
	image            text             NOT NULL DEFAULT '',
	command          jsonb,
	env              jsonb,
	phase            text             NOT NULL DEFAULT '',
	status_message   text             NOT NULL DEFAULT '',
	container_status text             NOT NULL DEFAULT '',
	run_id           text             NOT NULL DEFAULT '',
	generation       integer          NOT NULL DEFAULT 0,
	generations      jsonb,
	role             text             NOT NULL DEFAULT '',
	created_by       text             NOT NULL DEFAULT '',
	delegator        text             NOT NULL DEFAULT '',
	parent_agent_id  text             NOT NULL DEFAULT '',
	payload          json,
	version          bigint           NOT NULL,
	created_at       timestamptz      NOT NULL,
	updated_at       timestamptz      NOT NULL,
	UNIQUE (project_id, slug)
);
-- (filter, id) indexes serve ListAgents' "WHERE filter AND id > cursor
-- ORDER BY id" pages without a sort.
CREATE INDEX agents_project ON agents (project_id, id);
CREATE INDEX agents_broker ON agents (broker_id, id);

-- One row per agent holding a capacity slot; the agent's or the broker's
-- deletion frees it.
CREATE TABLE reservations (
	agent_id   text COLLATE "C" PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
	broker_id  text COLLATE "C" NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	created_at timestamptz NOT NULL
);
CREATE INDEX reservations_broker ON reservations (broker_id);

CREATE TABLE users (
	id         text COLLATE "C" PRIMARY KEY,
	name       text        NOT NULL DEFAULT '',
	email      text        NOT NULL DEFAULT '',
	role       text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL
);

-- user_id/agent_id/project_id are not foreign keys: a token names its
-- principal, and the Hub decides what a dangling one means. DeleteAgent
-- removes the agent's tokens explicitly.
CREATE TABLE tokens (
	id         text COLLATE "C" PRIMARY KEY,
	hash       bytea       NOT NULL UNIQUE,
	kind       text        NOT NULL,
	user_id    text        NOT NULL DEFAULT '',
	agent_id   text COLLATE "C" NOT NULL DEFAULT '',
	project_id text        NOT NULL DEFAULT '',
	scopes     jsonb,
	name       text        NOT NULL DEFAULT '',
	expires_at timestamptz,
	revoked_at timestamptz,
	created_at timestamptz NOT NULL
);
CREATE INDEX tokens_agent ON tokens (agent_id);

CREATE TABLE join_tokens (
	hash       bytea PRIMARY KEY,
	name       text        NOT NULL DEFAULT '',
	created_by text        NOT NULL DEFAULT '',
	expires_at timestamptz NOT NULL,
	used_at    timestamptz,
	created_at timestamptz NOT NULL
);

CREATE TABLE settings (
	key   text PRIMARY KEY,
	value bytea NOT NULL
);
