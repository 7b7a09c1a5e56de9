-- A deregistered broker's reservations stay with their agents. They were
-- cascade-deleted with the broker, which released the capacity of agents
-- whose workloads may still run there, with no evidence of a teardown. A
-- broker with agents is now deregistered only when forced; its agents keep
-- their records and their reservations until each is deleted (the agent's
-- deletion still frees its slot). Reserving already checks, under the
-- broker's row lock, that the broker exists.
ALTER TABLE reservations DROP CONSTRAINT reservations_broker_id_fkey;
