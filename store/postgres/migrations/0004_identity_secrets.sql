-- Identity, permissions and secrets.
--
-- projects.created_by: the principal that created the project.
ALTER TABLE projects ADD COLUMN created_by text NOT NULL DEFAULT '';

-- users.issuer and users.subject: the OIDC identity a user signs in with
-- ('' for the bootstrap admin). A signed-in identity maps to one user.
ALTER TABLE users ADD COLUMN issuer text NOT NULL DEFAULT '', ADD COLUMN subject text NOT NULL DEFAULT '';
CREATE UNIQUE INDEX users_subject ON users (issuer, subject) WHERE subject <> '';

-- Agent identity: granted scopes, the chain of principals that delegated
-- to the agent (e.g. ["user:u1","agent:a7"]) and the names of the secrets
-- it receives, all JSON arrays (NULL reads back as nil, as for command);
-- passthrough names a credential passed through ('' for none).
ALTER TABLE agents ADD COLUMN scopes jsonb, ADD COLUMN delegation_chain jsonb,
	ADD COLUMN passthrough text NOT NULL DEFAULT '', ADD COLUMN secret_names jsonb;

-- A user's tokens, newest first (ListTokens). Agent tokens have no
-- user_id and stay out of the index.
CREATE INDEX tokens_user ON tokens (user_id, created_at) WHERE user_id <> '';

-- Secrets, encrypted by the Hub before they get here. project_id '' holds
-- the hub-wide secrets, so it cannot be a foreign key: DeleteProject
-- deletes a project's secrets in its own transaction. Names use the "C"
-- collation so both engines list them in the same (byte) order.
CREATE TABLE secrets (
	project_id text COLLATE "C" NOT NULL,
	name       text COLLATE "C" NOT NULL,
	ciphertext bytea       NOT NULL,
	created_by text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (project_id, name)
);
