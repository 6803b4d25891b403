-- Waits: what a parked run waits for, since when, under which lease. A run in status
-- 'waiting' is a row here and a checkpoint: no worker, no coroutine.
CREATE TABLE outlast_waits (
    id               uuid PRIMARY KEY,
    run_id           uuid NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    interrupt_id     text NOT NULL,
    kind             text NOT NULL CHECK (kind IN
                         ('human', 'external', 'timer', 'event', 'auth', 'budget',
                          'reconciliation')),
    status           text NOT NULL CHECK (status IN ('open', 'answered', 'resumed', 'withdrawn')),
    object           jsonb,
    prompt           jsonb,
    schema           jsonb,
    event_keys       jsonb,
    has_default      boolean NOT NULL DEFAULT false,
    default_answer   jsonb,
    probe            jsonb,
    answer           jsonb,
    answered_how     text,
    since            timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_signal_at   timestamptz,
    lease_expires_at timestamptz,
    wake_at          timestamptz,
    renewals         integer NOT NULL DEFAULT 0,
    failures         integer NOT NULL DEFAULT 0,
    answered_at      timestamptz
);
CREATE INDEX outlast_waits_run ON outlast_waits (run_id, since);
CREATE INDEX outlast_waits_due ON outlast_waits (wake_at) WHERE status = 'open';
CREATE INDEX outlast_waits_keys ON outlast_waits USING gin (event_keys) WHERE status = 'open';

-- Signals are stored first and matched to waits second, so a signal that arrives before
-- its wait exists still wakes it (within the lookback window).
CREATE TABLE outlast_signals (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        text NOT NULL,
    payload    jsonb,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outlast_signals_key ON outlast_signals (key, created_at DESC);
