-- An answer may carry the client's Idempotency-Key: a retried POST /input (its 202 lost
-- in transit) is recognised as the same answer instead of a second one.
ALTER TABLE outlast_waits ADD COLUMN answer_key text;
