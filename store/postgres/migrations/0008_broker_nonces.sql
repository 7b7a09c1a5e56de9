-- The nonces of signed broker requests the Hub accepted (the control
-- channel's upgrade), each kept until its timestamp leaves the window in
-- which the signature would still verify: a captured request replayed
-- after a Hub restart, or to another Hub replica, is refused. Deleting the
-- broker drops its nonces.
CREATE TABLE broker_nonces (
	broker_id  text COLLATE "C" NOT NULL REFERENCES runtime_brokers (id) ON DELETE CASCADE,
	nonce      text COLLATE "C" NOT NULL,
	expires_at timestamptz      NOT NULL,
	PRIMARY KEY (broker_id, nonce)
);
CREATE INDEX broker_nonces_expires ON broker_nonces (expires_at);
