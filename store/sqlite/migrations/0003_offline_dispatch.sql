-- Dispatches for Runtime Brokers that were offline (the spec queues stops),
-- kept until the broker reconnects, and the records of API calls made with
-- an Idempotency-Key header.
--
-- seq is the delivery order (AUTOINCREMENT: never reused, even after
-- pruning). id names the dispatch; key is the idempotency key every
-- delivery attempt carries, so the broker runs it once. Finished rows
-- (delivered, failed, skipped) stay as a record until pruned. agent_id is
-- not a foreign key: a dispatch whose agent was deleted is kept and
-- marked skipped when its turn comes. Deleting the broker drops its queue.
CREATE TABLE dispatch_queue (
	seq        INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
	id         TEXT    NOT NULL UNIQUE,
	broker_id  TEXT    NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	agent_id   TEXT    NOT NULL,
	run_id     TEXT    NOT NULL DEFAULT '',
	method     TEXT    NOT NULL,
	body       TEXT,
	key        TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	result     TEXT    NOT NULL DEFAULT '',
	created_by TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
-- A broker's pending dispatches in order, without a sort.
CREATE INDEX dispatch_queue_pending ON dispatch_queue (broker_id, seq) WHERE status = 'pending';
-- At most one pending dispatch per agent and method: a second stop while
-- one waits is the same request.
CREATE UNIQUE INDEX dispatch_queue_one_pending ON dispatch_queue (agent_id, method) WHERE status = 'pending';
CREATE INDEX dispatch_queue_finished ON dispatch_queue (updated_at) WHERE status <> 'pending';

-- One row per (caller, Idempotency-Key); status 0 until the call answered.
-- A row past expires_at counts as absent and is replaced by the next claim.
CREATE TABLE idempotency_keys (
	caller       TEXT    NOT NULL,
	key          TEXT    NOT NULL,
	request_hash TEXT    NOT NULL,
	agent_id     TEXT    NOT NULL DEFAULT '',
	status       INTEGER NOT NULL DEFAULT 0,
	response     BLOB,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	PRIMARY KEY (caller, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
