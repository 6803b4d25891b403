-- Runs: the durable identity of each piece of work, with its worker lease.
CREATE TABLE outlast_runs (
    id               uuid PRIMARY KEY,
    -- Acceptance order: the queue and the listings sort by it (timestamps can tie).
    pos              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    principal        text NOT NULL DEFAULT '',
    thread_id        text NOT NULL,
    graph            text NOT NULL,
    status           text NOT NULL CHECK (status IN
                         ('queued', 'running', 'waiting', 'cancelling',
                          'completed', 'failed', 'cancelled')),
    input            jsonb NOT NULL,
    config           jsonb NOT NULL,
    metadata         jsonb NOT NULL,
    budget           jsonb,
    idempotency_key  text,
    fingerprint      text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    max_attempts     integer NOT NULL,
    worker_id        text,
    lease_epoch      bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    last_seq         bigint NOT NULL DEFAULT 0,
    result           jsonb,
    error            jsonb,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- NULL keys never conflict, so runs without a key are unconstrained.
    CONSTRAINT outlast_runs_idempotency UNIQUE (principal, idempotency_key)
);

-- The claim statement walks this index only.
CREATE INDEX outlast_runs_queue ON outlast_runs (pos) WHERE status = 'queued';
-- The reaper walks this one.
CREATE INDEX outlast_runs_leases ON outlast_runs (lease_expires_at)
    WHERE status IN ('running', 'cancelling');
CREATE INDEX outlast_runs_worker ON outlast_runs (worker_id) WHERE worker_id IS NOT NULL;
CREATE INDEX outlast_runs_thread ON outlast_runs (thread_id, pos DESC);
CREATE INDEX outlast_runs_thread_active ON outlast_runs (thread_id)
    WHERE status IN ('queued', 'running', 'cancelling', 'waiting');
CREATE INDEX outlast_runs_status ON outlast_runs (status, pos DESC);

-- Events: the ordered, persisted view of a run. seq is 1, 2, 3 … per run, no holes;
-- outlast_runs.last_seq is the counter, bumped under the run's row lock.
CREATE TABLE outlast_events (
    run_id     uuid NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, seq)
);
