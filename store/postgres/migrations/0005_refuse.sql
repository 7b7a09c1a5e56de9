-- scion_refuse raises an error with the given SQLSTATE and message. A
-- statement calls it (in a CASE branch, so only when needed) to refuse a
-- write: the error aborts the implicit transaction of the batch it is in,
-- so one round trip can claim, insert and reserve, and still roll
-- everything back when the broker is full or the key is in use. Codes:
-- SC409 idempotency key in use, SC429 broker at its limit (store.go maps
-- them). VOLATILE, so the planner never folds the call away or runs it
-- early.
CREATE OR REPLACE FUNCTION scion_refuse(code text, message text) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
END
$$;
