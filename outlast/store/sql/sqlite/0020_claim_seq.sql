-- The seq of the current attempt's `run.started`, written by the claim; see the Postgres
-- migration of the same number.
ALTER TABLE outlast_runs ADD COLUMN claim_seq INTEGER;
