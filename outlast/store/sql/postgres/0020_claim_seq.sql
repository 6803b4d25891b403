-- The seq of the current attempt's `run.started`, written by the claim: what the attempt
-- did is what the log holds after it. The reaper asks whether the attempt it takes over
-- saved a step (a `node.updated` after this seq, query run_progress) and, when it did,
-- gives the attempt back: a worker lost while its run made progress is the
-- infrastructure's failure, not the run's (store/transitions.py:reap). NULL for a run
-- not claimed since this migration: no progress is known, the attempt counts.
ALTER TABLE outlast_runs ADD COLUMN claim_seq bigint;
