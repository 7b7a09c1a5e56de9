-- Flat Runtime Brokers: the one runtime target a flat broker serves, and
-- an agent's pin (the flat broker it was placed on and the target that
-- broker served then), both JSON objects. NULL, the default for existing
-- rows, is a broker that is not flat and an agent with no pin. The pin is
-- written by the agent's insert only: no update statement names it.
ALTER TABLE runtime_brokers ADD COLUMN runtime_target TEXT;
ALTER TABLE agents ADD COLUMN pinned_runtime_target TEXT;
