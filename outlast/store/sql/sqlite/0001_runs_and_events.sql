-- The embedded default. Same shape as Postgres: JSON as TEXT, times as REAL unix seconds
-- taken from the database clock.
CREATE TABLE outlast_runs (
    pos              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    principal        TEXT NOT NULL DEFAULT '',
    thread_id        TEXT NOT NULL,
    graph            TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN
                         ('queued', 'running', 'waiting', 'cancelling',
                          'completed', 'failed', 'cancelled')),
    input            TEXT NOT NULL,
    config           TEXT NOT NULL,
    metadata         TEXT NOT NULL,
    budget           TEXT,
    idempotency_key  TEXT,
    fingerprint      TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    worker_id        TEXT,
    lease_epoch      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at REAL,
    last_seq         INTEGER NOT NULL DEFAULT 0,
    result           TEXT,
    error            TEXT,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    UNIQUE (principal, idempotency_key)
);
CREATE INDEX outlast_runs_queue ON outlast_runs (pos) WHERE status = 'queued';
CREATE INDEX outlast_runs_leases ON outlast_runs (lease_expires_at)
    WHERE status IN ('running', 'cancelling');
CREATE INDEX outlast_runs_worker ON outlast_runs (worker_id) WHERE worker_id IS NOT NULL;
CREATE INDEX outlast_runs_thread ON outlast_runs (thread_id, pos DESC);
CREATE INDEX outlast_runs_thread_active ON outlast_runs (thread_id)
    WHERE status IN ('queued', 'running', 'cancelling', 'waiting');
CREATE INDEX outlast_runs_status ON outlast_runs (status, pos DESC);

CREATE TABLE outlast_events (
    run_id     TEXT NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
