-- The LangGraph face (outlast/api/lg); see the Postgres migration of the same number.
ALTER TABLE outlast_runs ADD COLUMN options TEXT;

CREATE TABLE outlast_threads (
    thread_id  TEXT PRIMARY KEY,
    principal  TEXT NOT NULL DEFAULT '',
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX outlast_threads_principal ON outlast_threads (principal, created_at DESC);

INSERT OR IGNORE INTO outlast_threads (thread_id, principal, created_at, updated_at)
SELECT thread_id, principal, min(created_at), max(updated_at)
FROM outlast_runs GROUP BY thread_id;

CREATE TABLE outlast_assistants (
    assistant_id TEXT PRIMARY KEY,
    principal    TEXT NOT NULL DEFAULT '',
    graph_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT,
    config       TEXT NOT NULL DEFAULT '{}',
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    version      INTEGER NOT NULL DEFAULT 1,
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
);
CREATE INDEX outlast_assistants_principal ON outlast_assistants (principal, created_at DESC);
CREATE TABLE outlast_assistant_versions (
    assistant_id TEXT NOT NULL REFERENCES outlast_assistants (assistant_id) ON DELETE CASCADE,
    version      INTEGER NOT NULL,
    graph_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT,
    config       TEXT NOT NULL DEFAULT '{}',
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   REAL NOT NULL,
    PRIMARY KEY (assistant_id, version)
);

CREATE TABLE outlast_lg_runs (
    id                 TEXT PRIMARY KEY,
    run_id             TEXT NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    thread_id          TEXT NOT NULL,
    principal          TEXT NOT NULL DEFAULT '',
    assistant_id       TEXT NOT NULL,
    from_seq           INTEGER NOT NULL,
    kwargs             TEXT NOT NULL DEFAULT '{}',
    metadata           TEXT NOT NULL DEFAULT '{}',
    multitask_strategy TEXT NOT NULL DEFAULT 'enqueue',
    idempotency_key    TEXT,
    deleted            INTEGER NOT NULL DEFAULT 0,
    created_at         REAL NOT NULL,
    UNIQUE (principal, idempotency_key)
);
CREATE INDEX outlast_lg_runs_thread ON outlast_lg_runs (thread_id, created_at DESC);
CREATE INDEX outlast_lg_runs_run ON outlast_lg_runs (run_id, from_seq DESC);
