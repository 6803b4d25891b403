-- A thread's TTL strategy and when keep_latest last pruned it; see the Postgres migration.
ALTER TABLE outlast_threads ADD COLUMN ttl_strategy TEXT NOT NULL DEFAULT 'delete'
    CHECK (ttl_strategy IN ('delete', 'keep_latest'));
ALTER TABLE outlast_threads ADD COLUMN pruned_at REAL;
