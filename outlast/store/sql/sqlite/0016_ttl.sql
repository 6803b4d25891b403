-- TTLs (langgraph.json's `store.ttl` and `checkpointer.ttl`); see the Postgres migration.
ALTER TABLE outlast_threads ADD COLUMN ttl_minutes REAL;
CREATE INDEX outlast_threads_ttl ON outlast_threads (updated_at) WHERE ttl_minutes IS NOT NULL;
CREATE TABLE outlast_sweeps (
    name    TEXT PRIMARY KEY,
    next_at REAL NOT NULL
);
