-- Identity, permissions and secrets.
--
-- projects.created_by: the principal that created the project.
ALTER TABLE projects ADD COLUMN created_by TEXT NOT NULL DEFAULT '';

-- users.issuer and users.subject: the OIDC identity a user signs in with
-- ('' for the bootstrap admin). A signed-in identity maps to one user.
ALTER TABLE users ADD COLUMN issuer  TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN subject TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX users_subject ON users (issuer, subject) WHERE subject <> '';

-- Agent identity: granted scopes, the chain of principals that delegated
-- to the agent (e.g. ["user:u1","agent:a7"]) and the names of the secrets
-- it receives, all JSON arrays (NULL reads back as nil, as for command);
-- passthrough names a credential passed through ('' for none).
ALTER TABLE agents ADD COLUMN scopes           TEXT;
ALTER TABLE agents ADD COLUMN delegation_chain TEXT;
ALTER TABLE agents ADD COLUMN passthrough      TEXT NOT NULL DEFAULT '';
ALTER TABLE agents ADD COLUMN secret_names     TEXT;

-- A user's tokens, newest first (ListTokens). Agent tokens have no
-- user_id and stay out of the index.
CREATE INDEX tokens_user ON tokens (user_id, created_at) WHERE user_id <> '';

-- Secrets, encrypted by the Hub before they get here. project_id '' holds
-- the hub-wide secrets, so it cannot be a foreign key: DeleteProject
-- deletes a project's secrets in its own transaction.
CREATE TABLE secrets (
	project_id TEXT    NOT NULL,
	name       TEXT    NOT NULL,
	ciphertext BLOB    NOT NULL,
	created_by TEXT    NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (project_id, name)
) STRICT, WITHOUT ROWID;
