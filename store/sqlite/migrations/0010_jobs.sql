-- Delegated Jobs (ADR-0046): the Hub's ledger of the Jobs agents asked
-- their brokers to run on remote clusters, and the secrets scoped to one
-- broker (a spoke's kubeconfig, a bastion key).
--
-- A Job goes with its project (DeleteProject deletes its rows by cascade)
-- but outlives its agent and its broker: agent_id and broker_id are not
-- foreign keys, the ledger is history. command, result and error are JSON
-- (NULL: nil); result keeps the sentinel line's bytes as printed.
-- exit_code is NULL until the Job has one. logs is bytes, as on
-- PostgreSQL (whose text refuses a pod's NUL or invalid UTF-8; NULL: no
-- logs, as for trace). log_bytes and trace_bytes are the sizes of logs and
-- trace, written with them, so that lists need not read them. A rowid
-- table, not WITHOUT ROWID: rows carry up to megabytes.
CREATE TABLE jobs (
	id               TEXT    NOT NULL PRIMARY KEY,
	project_id       TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
	agent_id         TEXT    NOT NULL DEFAULT '',
	broker_id        TEXT    NOT NULL DEFAULT '',
	cluster          TEXT    NOT NULL DEFAULT '',
	tier             TEXT    NOT NULL DEFAULT '',
	namespace        TEXT    NOT NULL DEFAULT '',
	name             TEXT    NOT NULL DEFAULT '',
	image            TEXT    NOT NULL DEFAULT '',
	command          TEXT,
	gpus             INTEGER NOT NULL DEFAULT 0,
	queue            TEXT    NOT NULL DEFAULT '',
	deadline_seconds INTEGER NOT NULL DEFAULT 0,
	state            TEXT    NOT NULL,
	message          TEXT    NOT NULL DEFAULT '',
	created_by       TEXT    NOT NULL DEFAULT '',
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	started_at       INTEGER,
	finished_at      INTEGER,
	exit_code        INTEGER,
	result           TEXT,
	error            TEXT,
	logs             BLOB,
	trace            BLOB,
	log_bytes        INTEGER NOT NULL DEFAULT 0,
	trace_bytes      INTEGER NOT NULL DEFAULT 0
) STRICT;
-- (filter, id) indexes serve ListJobs' "WHERE filter AND id > cursor
-- ORDER BY id" pages without a sort (and the project's cascade).
CREATE INDEX jobs_project ON jobs (project_id, id);
CREATE INDEX jobs_agent ON jobs (agent_id, id);
CREATE INDEX jobs_broker_state ON jobs (broker_id, state, id);
-- The rows ExpirePendingJobs looks for at Hub start.
CREATE INDEX jobs_pending ON jobs (created_at) WHERE state = 'pending';

-- Broker-scoped secrets, encrypted by the Hub before they get here. They
-- go with their broker (DeleteBroker, by cascade, in its transaction).
CREATE TABLE broker_secrets (
	broker_id  TEXT    NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	name       TEXT    NOT NULL,
	ciphertext BLOB    NOT NULL,
	created_by TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (broker_id, name)
) STRICT, WITHOUT ROWID;
