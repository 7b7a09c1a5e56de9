-- A move's record: the saga of an agent moved to another broker,
-- persisted step by step (step: the last one done; outcome '' while it
-- runs, then 'completed' or 'failed'), the source's cleanup outcome, the
-- handoff and the agent's configuration before the move (previous, JSON,
-- restored by a rollback). At most one move of an agent runs at a time;
-- its records go with the agent.
CREATE TABLE agent_moves (
	id               TEXT    NOT NULL PRIMARY KEY,
	agent_id         TEXT    NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
	source_broker_id TEXT    NOT NULL,
	target_broker_id TEXT    NOT NULL,
	step             TEXT    NOT NULL,
	outcome          TEXT    NOT NULL DEFAULT '',
	source_cleanup   TEXT    NOT NULL DEFAULT '',
	message          TEXT    NOT NULL DEFAULT '',
	handoff          TEXT    NOT NULL DEFAULT '',
	previous         TEXT,
	created_by       TEXT    NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX agent_moves_running ON agent_moves (agent_id) WHERE outcome = '';
CREATE INDEX agent_moves_agent ON agent_moves (agent_id, created_at);
