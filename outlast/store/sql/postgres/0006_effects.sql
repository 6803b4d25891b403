-- The effects ledger: one row per side effect of a run, keyed by what stays the same when
-- a node runs again. 'started' is committed before the call leaves the process.
CREATE TABLE outlast_effects (
    run_id      uuid NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    key         text NOT NULL,
    tool        text NOT NULL,
    args_hash   text NOT NULL,
    args        jsonb,
    idempotent  boolean NOT NULL,
    status      text NOT NULL CHECK (status IN ('started', 'done', 'failed', 'unknown')),
    result      jsonb,
    error       text,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    calls       integer NOT NULL DEFAULT 1,
    PRIMARY KEY (run_id, key)
);
