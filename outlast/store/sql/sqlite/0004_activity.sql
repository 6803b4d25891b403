ALTER TABLE outlast_runs ADD COLUMN activity TEXT;
