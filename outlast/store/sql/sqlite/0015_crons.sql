-- Crons (store/cron_ops.py); see the Postgres migration of the same number.
CREATE TABLE outlast_crons (
    cron_id          TEXT PRIMARY KEY,
    principal        TEXT NOT NULL DEFAULT '',
    assistant_id     TEXT NOT NULL,
    thread_id        TEXT REFERENCES outlast_threads (thread_id) ON DELETE CASCADE,
    schedule         TEXT NOT NULL,
    timezone         TEXT,
    payload          TEXT NOT NULL DEFAULT '{}',
    metadata         TEXT NOT NULL DEFAULT '{}',
    enabled          INTEGER NOT NULL DEFAULT 1,
    end_time         REAL,
    on_run_completed TEXT CHECK (on_run_completed IN ('delete', 'keep')),
    next_run_at      REAL,
    firing_at        REAL,
    claimed_until    REAL,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL
);
CREATE INDEX outlast_crons_principal ON outlast_crons (principal, created_at DESC);
CREATE INDEX outlast_crons_thread ON outlast_crons (thread_id);
CREATE INDEX outlast_crons_due ON outlast_crons (next_run_at)
    WHERE enabled = 1 AND firing_at IS NULL;
CREATE INDEX outlast_crons_firing ON outlast_crons (claimed_until) WHERE firing_at IS NOT NULL;
