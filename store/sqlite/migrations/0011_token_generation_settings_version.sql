-- Agent token renewal retires the token it replaces (after a short grace
-- the Hub keeps in code): a token carries the generation it was minted in,
-- and the agent row the current one, moved on only by a renewal.
-- token_renewed_at is that renewal's time in Unix seconds (0: never).
ALTER TABLE agents ADD COLUMN token_generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agents ADD COLUMN token_renewed_at INTEGER NOT NULL DEFAULT 0;

-- Settings carry a version, moved on by every write, for compare-and-set
-- writes (the Hub's ETag / If-Match on its settings). Existing rows start
-- at 1; 0 means unset.
ALTER TABLE settings ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
