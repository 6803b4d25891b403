-- The schema of the run store's file (outlast.db) as the migrations leave it, in one place.
-- Up to migration: 0020_claim_seq
--
-- Documentation, not a way to build a database: `outlast migrate` (SqliteStore.migrate)
-- applies the numbered files beside this one, to a fresh file as to an old one, so there
-- is one path to a schema and outlast_migrations always says what a file has.
-- tests/test_store_schema.py applies the migrations to an empty file, runs this script on
-- another and compares the two (columns, keys, checks, indexes): when you add a migration,
-- change this file to the schema it leaves and the "Up to migration" line above.
--
-- JSON is TEXT, times are REAL unix seconds taken from the database clock
-- (the view outlast_clock, at the end), booleans are INTEGER 0/1. The checkpoints
-- and LangGraph's item store live in another file (checkpoints.db), in LangGraph's own
-- tables.

-- What SqliteStore.migrate itself creates before the first migration.
CREATE TABLE outlast_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
);

-- Runs: the durable identity of each piece of work, with its worker lease. `pos` is the
-- acceptance order: the queue and the listings sort by it (timestamps can tie).
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
    activity         TEXT,  -- what a running run is doing now (0004)
    usage            TEXT,  -- budget usage (0005)
    options          TEXT,  -- what a LangGraph request sets for the execution (0009)
    supervision      TEXT,  -- what the supervisor remembers between attempts (0011)
    ending           TEXT,  -- how a run owing compensations ends (0013)
    claim_seq        INTEGER,  -- the seq of the current attempt's run.started (0020)
    -- NULL keys never conflict, so runs without a key are unconstrained.
    UNIQUE (principal, idempotency_key)
);
CREATE INDEX outlast_runs_queue ON outlast_runs (pos)
    WHERE status = 'queued' OR (status = 'cancelling' AND worker_id IS NULL);
CREATE INDEX outlast_runs_leases ON outlast_runs (lease_expires_at)
    WHERE status IN ('running', 'cancelling');
CREATE INDEX outlast_runs_worker ON outlast_runs (worker_id) WHERE worker_id IS NOT NULL;
CREATE INDEX outlast_runs_thread ON outlast_runs (thread_id, pos DESC);
CREATE INDEX outlast_runs_thread_active ON outlast_runs (thread_id)
    WHERE status IN ('queued', 'running', 'cancelling', 'waiting');
CREATE INDEX outlast_runs_status ON outlast_runs (status, pos DESC);

-- Events: seq is 1, 2, 3 … per run, no holes; outlast_runs.last_seq is the counter.
CREATE TABLE outlast_events (
    run_id     TEXT NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- Waits: what a parked run waits for, since when, under which lease.
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
    answered_at      REAL,
    answer_key       TEXT  -- the Idempotency-Key the answer came with (0003)
);
CREATE INDEX outlast_waits_run ON outlast_waits (run_id, since);
CREATE INDEX outlast_waits_due ON outlast_waits (wake_at) WHERE status = 'open';

-- Signals are stored first and matched to waits second; a signal wakes only the waits
-- of the principal that sent it.
CREATE TABLE outlast_signals (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    key        TEXT NOT NULL,
    payload    TEXT,
    created_at REAL NOT NULL,
    principal  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX outlast_signals_key ON outlast_signals (key, created_at DESC);

-- The effects ledger: one row per side effect of a run.
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
    compensate  TEXT,  -- the import path of what undoes it (0013)
    compensates TEXT,  -- on an undoing: the key of the effect it undoes (0013)
    PRIMARY KEY (run_id, key)
);

-- The LangGraph face: threads as entities, user assistants and their versions, and
-- LangGraph runs (stretches of one outlast run's log).
CREATE TABLE outlast_threads (
    thread_id  TEXT PRIMARY KEY,
    principal  TEXT NOT NULL DEFAULT '',
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    temporary  INTEGER NOT NULL DEFAULT 0,  -- a stateless run's thread (0010)
    ttl_minutes REAL,  -- its TTL from its last update, null: none (0016)
    ttl_strategy TEXT NOT NULL DEFAULT 'delete'  -- what its TTL does (0017)
        CHECK (ttl_strategy IN ('delete', 'keep_latest')),
    pruned_at  REAL  -- when keep_latest last pruned it (0017)
);
CREATE INDEX outlast_threads_principal ON outlast_threads (principal, created_at DESC);
CREATE INDEX outlast_threads_temporary ON outlast_threads (thread_id) WHERE temporary = 1;
CREATE INDEX outlast_threads_ttl ON outlast_threads (updated_at) WHERE ttl_minutes IS NOT NULL;

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

-- Push notifications: subscriptions, the outbox of deliveries and their attempts (0012).
CREATE TABLE outlast_webhooks (
    id          TEXT PRIMARY KEY,
    principal   TEXT NOT NULL DEFAULT '',
    run_id      TEXT REFERENCES outlast_runs (id) ON DELETE CASCADE,
    url         TEXT NOT NULL,
    events      TEXT NOT NULL,  -- a JSON array of event types
    format      TEXT NOT NULL CHECK (format IN ('outlast', 'langgraph', 'a2a')),
    secret      TEXT,
    extra       TEXT,
    once        INTEGER NOT NULL DEFAULT 0,
    wait_kinds  TEXT,
    idempotency_key TEXT,
    fingerprint TEXT,
    created_at  REAL NOT NULL,
    UNIQUE (principal, idempotency_key)
);
CREATE INDEX outlast_webhooks_principal ON outlast_webhooks (principal, created_at)
    WHERE run_id IS NULL;
CREATE INDEX outlast_webhooks_run ON outlast_webhooks (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE outlast_deliveries (
    id           TEXT PRIMARY KEY,
    webhook_id   TEXT NOT NULL REFERENCES outlast_webhooks (id) ON DELETE CASCADE,
    run_id       TEXT NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    type         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivering', 'delivered', 'dead')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      REAL NOT NULL,
    claimed_by   TEXT,
    last_error   TEXT,
    created_at   REAL NOT NULL,
    delivered_at REAL,
    UNIQUE (webhook_id, run_id, seq)
);
CREATE INDEX outlast_deliveries_due ON outlast_deliveries (next_at)
    WHERE status IN ('pending', 'delivering');
CREATE INDEX outlast_deliveries_webhook ON outlast_deliveries (webhook_id, created_at DESC);

CREATE TABLE outlast_delivery_attempts (
    delivery_id TEXT NOT NULL REFERENCES outlast_deliveries (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    at          REAL NOT NULL,
    status_code INTEGER,
    error       TEXT,
    duration_ms REAL NOT NULL,
    worker_id   TEXT NOT NULL,
    PRIMARY KEY (delivery_id, n)
);

CREATE TRIGGER outlast_outbox AFTER INSERT ON outlast_events
WHEN NEW.type IN ('run.waiting', 'run.completed', 'run.failed', 'run.cancelled',
                  'supervisor.verdict', 'budget.checkpoint')
BEGIN
    INSERT INTO outlast_deliveries (id, webhook_id, run_id, seq, type, payload, next_at,
                                    created_at)
    SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(2))
                 || '-' || hex(randomblob(2)) || '-' || hex(randomblob(6))),
           w.id, NEW.run_id, NEW.seq, NEW.type,
           json_object(
               'type', NEW.type,
               'timestamp', strftime('%Y-%m-%dT%H:%M:%fZ', NEW.created_at, 'unixepoch'),
               'data', json_object(
                   'run_id', NEW.run_id, 'seq', NEW.seq, 'thread_id', r.thread_id,
                   'graph', r.graph, 'status', r.status, 'event', json(NEW.data))),
           NEW.created_at, NEW.created_at
    FROM outlast_runs r
    JOIN outlast_webhooks w
      ON w.run_id = r.id OR (w.run_id IS NULL AND w.principal = r.principal)
    WHERE r.id = NEW.run_id
      AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = NEW.type)
      AND (NEW.type <> 'run.waiting' OR w.wait_kinds IS NULL
           OR EXISTS (SELECT 1 FROM json_each(NEW.data, '$.kinds') k
                      JOIN json_each(w.wait_kinds) q ON k.value = q.value))
      AND NOT (w.once AND EXISTS (SELECT 1 FROM outlast_deliveries d
                                  WHERE d.webhook_id = w.id));
END;

-- 0014: the database's clock, defined once (queries read (SELECT now FROM outlast_clock)).
CREATE VIEW outlast_clock AS SELECT (julianday('now') - 2440587.5) * 86400.0 AS now;

-- 0015: crons (store/cron_ops.py): a run request made on a schedule; see the Postgres file.
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

-- 0016: the sweeps' leases (store/sweeps.py): when each kind of sweep is next due.
CREATE TABLE outlast_sweeps (
    name    TEXT PRIMARY KEY,
    next_at REAL NOT NULL
);
