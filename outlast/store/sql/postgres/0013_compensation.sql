-- Compensation (runtime/compensation.py). An effect declared with `compensate=` keeps the
-- import path of the function that undoes it; the undoing is a ledger row of its own
-- (`compensates` names the effect it undoes), so it happens once across crashes.
ALTER TABLE outlast_effects ADD COLUMN compensate text;
ALTER TABLE outlast_effects ADD COLUMN compensates text;
-- How a run that owes compensations is going to end ({"status", "error"}), decided before
-- the first compensation: a worker that takes the run over finishes the compensations and
-- ends it so, without running the graph again.
ALTER TABLE outlast_runs ADD COLUMN ending jsonb;
-- A run cancelled while queued or waiting with compensations owed is `cancelling` with no
-- worker until one claims it: the claim walks those too.
DROP INDEX outlast_runs_queue;
CREATE INDEX outlast_runs_queue ON outlast_runs (pos)
    WHERE status = 'queued' OR (status = 'cancelling' AND worker_id IS NULL);
