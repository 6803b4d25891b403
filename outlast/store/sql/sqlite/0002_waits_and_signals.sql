CREATE TABLE outlast_waits (
    id               TEXT PRIMARY KEY,
    run_id           TEXT NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    interrupt_id     TEXT NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN
                         ('human', 'external', 'timer', 'event', 'auth', 'budget',
                          'reconciliation')),
    status           TEXT NOT NULL CHECK (status IN ('open', 'answered', 'resumed', 'withdrawn')),
    object           TEXT,
    prompt           TEXT,
    schema           TEXT,
    event_keys       TEXT,
    has_default      INTEGER NOT NULL DEFAULT 0,
    default_answer   TEXT,
    probe            TEXT,
    answer           TEXT,
    answered_how     TEXT,
    since            REAL NOT NULL,
    last_signal_at   REAL,
    lease_expires_at REAL,
    wake_at          REAL,
    renewals         INTEGER NOT NULL DEFAULT 0,
    failures         INTEGER NOT NULL DEFAULT 0,
    answered_at      REAL
);
CREATE INDEX outlast_waits_run ON outlast_waits (run_id, since);
CREATE INDEX outlast_waits_due ON outlast_waits (wake_at) WHERE status = 'open';

CREATE TABLE outlast_signals (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    key        TEXT NOT NULL,
    payload    TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX outlast_signals_key ON outlast_signals (key, created_at DESC);
