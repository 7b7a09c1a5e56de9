-- Per-agent published ports: the container ports an agent asked for and
-- the host ports its broker assigned from its port pool, both JSON arrays.
-- NULL (the default for existing rows) reads back as no ports.
ALTER TABLE agents ADD COLUMN ports TEXT;
ALTER TABLE agents ADD COLUMN port_mappings TEXT;
