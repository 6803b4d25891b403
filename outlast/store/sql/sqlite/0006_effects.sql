CREATE TABLE outlast_effects (
    run_id      TEXT NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args_hash   TEXT NOT NULL,
    args        TEXT,
    idempotent  INTEGER NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('started', 'done', 'failed', 'unknown')),
    result      TEXT,
    error       TEXT,
    started_at  REAL NOT NULL,
    finished_at REAL,
    calls       INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (run_id, key)
);
