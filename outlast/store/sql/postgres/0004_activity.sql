-- What a running run is doing now (node, model call, tool), with its activity lease;
-- written by its worker at a bounded rate, read by snapshots.
ALTER TABLE outlast_runs ADD COLUMN activity jsonb;
