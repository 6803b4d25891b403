-- Compensation (see the Postgres migration).
ALTER TABLE outlast_effects ADD COLUMN compensate TEXT;
ALTER TABLE outlast_effects ADD COLUMN compensates TEXT;
ALTER TABLE outlast_runs ADD COLUMN ending TEXT;
DROP INDEX outlast_runs_queue;
CREATE INDEX outlast_runs_queue ON outlast_runs (pos)
    WHERE status = 'queued' OR (status = 'cancelling' AND worker_id IS NULL);
