-- The nonces of signed broker requests the Hub accepted (the control
-- channel's upgrade), each kept until its timestamp leaves the window in
-- which the signature would still verify: a captured request replayed
-- after a Hub restart is refused. Deleting the broker drops its nonces.
CREATE TABLE broker_nonces (
	broker_id  TEXT    NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	nonce      TEXT    NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (broker_id, nonce)
) STRICT, WITHOUT ROWID;
CREATE INDEX broker_nonces_expires ON broker_nonces (expires_at);
