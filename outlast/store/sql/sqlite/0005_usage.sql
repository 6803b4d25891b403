ALTER TABLE outlast_runs ADD COLUMN usage TEXT;
