-- A signal belongs to the principal that sent it, and wakes only that principal's waits.
ALTER TABLE outlast_signals ADD COLUMN principal TEXT NOT NULL DEFAULT '';
