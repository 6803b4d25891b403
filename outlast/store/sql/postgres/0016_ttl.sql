-- TTLs (langgraph.json's `store.ttl` and `checkpointer.ttl`, a thread's own `ttl`).
-- A thread's TTL in minutes, counted from its last update (its own or its runs'); null:
-- it never expires. Set when the thread is created (its `ttl`, else the deployment's
-- default), so a default added later leaves older threads alone, as on LangGraph's server.
ALTER TABLE outlast_threads ADD COLUMN ttl_minutes double precision;
CREATE INDEX outlast_threads_ttl ON outlast_threads (updated_at) WHERE ttl_minutes IS NOT NULL;
-- One row per kind of sweep (items, threads): the next time it is due. A process sweeps
-- only if it moves next_at forward itself, so one sweep per interval runs across every
-- process (store/sweeps.py).
CREATE TABLE outlast_sweeps (
    name    text PRIMARY KEY,
    next_at timestamptz NOT NULL
);
