-- A deregistered broker's reservations stay with their agents. They were
-- cascade-deleted with the broker, which released the capacity of agents
-- whose workloads may still run there, with no evidence of a teardown. A
-- broker with agents is now deregistered only when forced; its agents keep
-- their records and their reservations until each is deleted (the agent's
-- deletion still frees its slot). SQLite cannot drop a foreign key, so the
-- table is rebuilt without the broker reference; store code checks that
-- the broker exists when it reserves.
CREATE TABLE reservations_new (
	agent_id   TEXT    NOT NULL PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
	broker_id  TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO reservations_new (agent_id, broker_id, created_at)
	SELECT agent_id, broker_id, created_at FROM reservations;
DROP TABLE reservations;
ALTER TABLE reservations_new RENAME TO reservations;
CREATE INDEX reservations_broker ON reservations (broker_id);
