-- A move's record: the saga of an agent moved to another broker,
-- persisted step by step (step: the last one done; outcome '' while it
-- runs, then 'completed' or 'failed'), the source's cleanup outcome, the
-- handoff and the agent's configuration before the move (previous, JSON,
-- restored by a rollback). At most one move of an agent runs at a time;
-- its records go with the agent.
CREATE TABLE agent_moves (
	id               text COLLATE "C" PRIMARY KEY,
	agent_id         text COLLATE "C" NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
	source_broker_id text COLLATE "C" NOT NULL,
	target_broker_id text COLLATE "C" NOT NULL,
	step             text        NOT NULL,
	outcome          text        NOT NULL DEFAULT '',
	source_cleanup   text        NOT NULL DEFAULT '',
	message          text        NOT NULL DEFAULT '',
	handoff          text        NOT NULL DEFAULT '',
	previous         jsonb,
	created_by       text        NOT NULL DEFAULT '',
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX agent_moves_running ON agent_moves (agent_id) WHERE outcome = '';
CREATE INDEX agent_moves_agent ON agent_moves (agent_id, created_at);
