-- Delegated Jobs (ADR-0046): the Hub's ledger of the Jobs agents asked
-- their brokers to run on remote clusters, and the secrets scoped to one
-- broker (a spoke's kubeconfig, a bastion key).
--
-- A Job goes with its project (DeleteProject deletes its rows by cascade)
-- but outlives its agent and its broker: agent_id and broker_id are not
-- foreign keys, the ledger is history. command and error are JSON (NULL:
-- nil); result is json, not jsonb, to keep the sentinel line's bytes as
-- printed. exit_code is NULL until the Job has one. logs is bytes, not
-- text: a pod's output may hold NUL or invalid UTF-8, which text refuses
-- (NULL: no logs, as for trace). log_bytes and trace_bytes are the sizes
-- of logs and trace, written with them, so that lists need not read them.
CREATE TABLE jobs (
	id               text COLLATE "C" PRIMARY KEY,
	project_id       text COLLATE "C" NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	agent_id         text COLLATE "C" NOT NULL DEFAULT '',
	broker_id        text COLLATE "C" NOT NULL DEFAULT '',
	cluster          text        NOT NULL DEFAULT '',
	tier             text        NOT NULL DEFAULT '',
	namespace        text        NOT NULL DEFAULT '',
	name             text        NOT NULL DEFAULT '',
	image            text        NOT NULL DEFAULT '',
	command          jsonb,
	gpus             integer     NOT NULL DEFAULT 0,
	queue            text        NOT NULL DEFAULT '',
	deadline_seconds bigint      NOT NULL DEFAULT 0,
	state            text COLLATE "C" NOT NULL,
	message          text        NOT NULL DEFAULT '',
	created_by       text        NOT NULL DEFAULT '',
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL,
	started_at       timestamptz,
	finished_at      timestamptz,
	exit_code        integer,
	result           json,
	error            jsonb,
	logs             bytea,
	trace            bytea,
	log_bytes        integer     NOT NULL DEFAULT 0,
	trace_bytes      integer     NOT NULL DEFAULT 0
);
-- (filter, id) indexes serve ListJobs' "WHERE filter AND id > cursor
-- ORDER BY id" pages without a sort (and the project's cascade).
CREATE INDEX jobs_project ON jobs (project_id, id);
CREATE INDEX jobs_agent ON jobs (agent_id, id);
CREATE INDEX jobs_broker_state ON jobs (broker_id, state, id);
-- The rows ExpirePendingJobs looks for at Hub start.
CREATE INDEX jobs_pending ON jobs (created_at) WHERE state = 'pending';

-- Broker-scoped secrets, encrypted by the Hub before they get here. They
-- go with their broker (DeleteBroker, by cascade, in its transaction).
-- Names use the "C" collation so both engines list them in byte order.
CREATE TABLE broker_secrets (
	broker_id  text COLLATE "C" NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	name       text COLLATE "C" NOT NULL,
	ciphertext bytea       NOT NULL,
	created_by text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (broker_id, name)
);
