-- Dispatches for Runtime Brokers that were offline (the spec queues stops),
-- kept until the broker reconnects, and the records of API calls made with
-- an Idempotency-Key header.
--
-- seq is the delivery order (an identity: never reused, even after
-- pruning). id names the dispatch; key is the idempotency key every
-- delivery attempt carries, so the broker runs it once. Finished rows
-- (delivered, failed, skipped) stay as a record until pruned. agent_id is
-- not a foreign key: a dispatch whose agent was deleted is kept and
-- marked skipped when its turn comes. Deleting the broker drops its queue.
-- body is json (not jsonb) so the bytes come back as they went in.
CREATE TABLE dispatch_queue (
	seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         text COLLATE "C" NOT NULL UNIQUE,
	broker_id  text COLLATE "C" NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	agent_id   text COLLATE "C" NOT NULL,
	run_id     text        NOT NULL DEFAULT '',
	method     text        NOT NULL,
	body       json,
	key        text        NOT NULL,
	status     text        NOT NULL,
	attempts   integer     NOT NULL DEFAULT 0,
	result     text        NOT NULL DEFAULT '',
	created_by text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL
);
-- A broker's pending dispatches in order, without a sort.
CREATE INDEX dispatch_queue_pending ON dispatch_queue (broker_id, seq) WHERE status = 'pending';
-- At most one pending dispatch per agent and method: a second stop while
-- one waits is the same request.
CREATE UNIQUE INDEX dispatch_queue_one_pending ON dispatch_queue (agent_id, method) WHERE status = 'pending';
CREATE INDEX dispatch_queue_finished ON dispatch_queue (updated_at) WHERE status <> 'pending';

-- One row per (caller, Idempotency-Key); status 0 until the call answered.
-- A row past expires_at counts as absent and is replaced by the next claim.
CREATE TABLE idempotency_keys (
	caller       text        NOT NULL,
	key          text        NOT NULL,
	request_hash text        NOT NULL,
	agent_id     text        NOT NULL DEFAULT '',
	status       integer     NOT NULL DEFAULT 0,
	response     bytea,
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL,
	PRIMARY KEY (caller, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
