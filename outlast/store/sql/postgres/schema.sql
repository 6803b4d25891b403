-- The schema of the run store (the outlast_* tables and functions) as the migrations
-- leave it, in one place.
-- Up to migration: 0020_claim_seq
--
-- Documentation, not a way to build a database: `outlast migrate` (PostgresStore.migrate)
-- applies the numbered files beside this one, to a fresh database as to an old one, so
-- there is one path to a schema and outlast_migrations always says what a database has.
-- tests/test_store_schema.py builds one database from the migrations and one from this
-- file and compares their catalogs (columns, constraints, indexes, functions): when you
-- add a migration, change this file to the schema it leaves and the "Up to migration"
-- line above. LangGraph's own tables (checkpoints, the item store) are created by
-- LangGraph's setup() and are not described here.

-- What PostgresStore.migrate itself creates before the first migration.
CREATE TABLE outlast_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

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
    activity         jsonb,  -- what a running run is doing now (0004)
    usage            jsonb,  -- budget usage, and whether a budget closed it (0005)
    options          jsonb,  -- what a LangGraph request sets for the execution (0009)
    supervision      jsonb,  -- what the supervisor remembers between attempts (0011)
    ending           jsonb,  -- how a run owing compensations ends (0013)
    append_token     uuid,   -- the last batch of events the lease holder appended (0018)
    claim_seq        bigint, -- the seq of the current attempt's run.started (0020)
    -- NULL keys never conflict, so runs without a key are unconstrained.
    CONSTRAINT outlast_runs_idempotency UNIQUE (principal, idempotency_key)
);

-- The claim statement walks this index only.
CREATE INDEX outlast_runs_queue ON outlast_runs (pos)
    WHERE status = 'queued' OR (status = 'cancelling' AND worker_id IS NULL);
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
    answered_at      timestamptz,
    answer_key       text  -- the Idempotency-Key the answer came with (0003)
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
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- a signal wakes only the waits of the principal that sent it (0007)
    principal  text NOT NULL DEFAULT ''
);
CREATE INDEX outlast_signals_key ON outlast_signals (key, created_at DESC);

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
    compensate  text,  -- the import path of what undoes it (0013)
    compensates text,  -- on an undoing: the key of the effect it undoes (0013)
    PRIMARY KEY (run_id, key)
);

-- The fence of a checkpoint write as a statement that fails. The saver sends the fence
-- and its writes as one pipeline, which the server runs as one implicit transaction up
-- to the Sync: when the lease is gone the fence fails, the server skips and rolls back
-- the writes, and the client reads SQLSTATE OL001 (outlast/store/pg_saver.py). FOR KEY
-- SHARE: the reaper's FOR UPDATE SKIP LOCKED passes over a run while its holder's
-- checkpoint is in flight, and the holder's own event appends (which update last_seq,
-- not the key) never wait for it.
CREATE FUNCTION outlast_fence(p_run uuid, p_worker text, p_epoch bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM outlast_runs
     WHERE id = p_run AND worker_id = p_worker AND lease_epoch = p_epoch
       AND status IN ('running', 'cancelling')
       FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run %: lease epoch % is no longer held by %', p_run, p_epoch, p_worker
            USING ERRCODE = 'OL001';
    END IF;
END
$$;

-- 0019: a run is never attached to another owner's thread: the run insert calls this when
-- the thread row names another principal than the one it expects (SQLSTATE OL002).
CREATE FUNCTION outlast_thread_refused(p_thread text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'thread % belongs to another owner', p_thread USING ERRCODE = 'OL002';
END
$$;

-- The LangGraph face (outlast/api/lg): the entities LangGraph's clients name that the
-- native API does not, over the same runs and events.

-- Threads as entities: they exist before their first run (POST /threads) and carry
-- metadata; a thread's status and values are derived from its runs and checkpoints.
CREATE TABLE outlast_threads (
    thread_id  text PRIMARY KEY,
    principal  text NOT NULL DEFAULT '',
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- a stateless run's thread (on_completion=delete), deleted once its run ended (0010)
    temporary  boolean NOT NULL DEFAULT false,
    -- its TTL in minutes from its last update (its own or its runs'); null: none (0016)
    ttl_minutes double precision,
    -- what its TTL does: delete it, or keep only its latest checkpoints (0017)
    ttl_strategy text NOT NULL DEFAULT 'delete' CHECK (ttl_strategy IN ('delete', 'keep_latest')),
    pruned_at  timestamptz  -- when keep_latest last pruned it (0017)
);
CREATE INDEX outlast_threads_principal ON outlast_threads (principal, created_at DESC);
CREATE INDEX outlast_threads_metadata ON outlast_threads USING gin (metadata jsonb_path_ops);
CREATE INDEX outlast_threads_temporary ON outlast_threads (thread_id) WHERE temporary;
CREATE INDEX outlast_threads_ttl ON outlast_threads (updated_at) WHERE ttl_minutes IS NOT NULL;

-- User assistants (system assistants, one per graph, are not stored) and their versions.
CREATE TABLE outlast_assistants (
    assistant_id text PRIMARY KEY,
    principal    text NOT NULL DEFAULT '',
    graph_id     text NOT NULL,
    name         text NOT NULL,
    description  text,
    config       jsonb NOT NULL DEFAULT '{}'::jsonb,
    context      jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
    version      integer NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outlast_assistants_principal ON outlast_assistants (principal, created_at DESC);
CREATE TABLE outlast_assistant_versions (
    assistant_id text NOT NULL REFERENCES outlast_assistants (assistant_id) ON DELETE CASCADE,
    version      integer NOT NULL,
    graph_id     text NOT NULL,
    name         text NOT NULL,
    description  text,
    config       jsonb NOT NULL DEFAULT '{}'::jsonb,
    context      jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (assistant_id, version)
);

-- A LangGraph run is a stretch of one outlast run's log: the first one has the outlast
-- run's id and starts at seq 0; a resume (a new LangGraph run with command.resume)
-- answers the outlast run's waits and continues its log after `from_seq`. Runs created
-- through /v1 have no row here and are their own first stretch.
CREATE TABLE outlast_lg_runs (
    id                 uuid PRIMARY KEY,
    run_id             uuid NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    thread_id          text NOT NULL,
    principal          text NOT NULL DEFAULT '',
    assistant_id       text NOT NULL,
    from_seq           bigint NOT NULL,
    kwargs             jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
    multitask_strategy text NOT NULL DEFAULT 'enqueue',
    idempotency_key    text,
    -- cancelled with action=rollback: gone for LangGraph's clients (404)
    deleted            boolean NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT outlast_lg_runs_idempotency UNIQUE (principal, idempotency_key)
);
CREATE INDEX outlast_lg_runs_thread ON outlast_lg_runs (thread_id, created_at DESC);
CREATE INDEX outlast_lg_runs_run ON outlast_lg_runs (run_id, from_seq DESC);

-- Push notifications: subscriptions, the outbox of deliveries and their attempts (0012).
CREATE TABLE outlast_webhooks (
    id          uuid PRIMARY KEY,
    principal   text NOT NULL DEFAULT '',
    -- set: a subscription to this run only (LangGraph's per-run `webhook`, an A2A push
    -- config); NULL: every run of the principal.
    run_id      uuid REFERENCES outlast_runs (id) ON DELETE CASCADE,
    url         text NOT NULL,
    events      jsonb NOT NULL,  -- an array of event types
    format      text NOT NULL CHECK (format IN ('outlast', 'langgraph', 'a2a')),
    secret      text,  -- the signing secret, encrypted (outlast/secrets.py); never clear
    extra       jsonb,  -- what a format needs besides (the LangGraph run, the A2A token)
    once        boolean NOT NULL DEFAULT false,  -- only its first matching event
    -- set: run.waiting only when the run waits on one of these kinds (a JSON array)
    wait_kinds  jsonb,
    -- a retried POST /v1/webhooks finds the subscription it made (NULLs never conflict)
    idempotency_key text,
    fingerprint text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT outlast_webhooks_idempotency UNIQUE (principal, idempotency_key)
);
CREATE INDEX outlast_webhooks_principal ON outlast_webhooks (principal, created_at)
    WHERE run_id IS NULL;
CREATE INDEX outlast_webhooks_run ON outlast_webhooks (run_id) WHERE run_id IS NOT NULL;

-- One row per (subscription, event). `next_at` is when a pending delivery is due, and
-- for one being delivered when its claim lapses: a worker that died mid-delivery leaves
-- it due again, and it is sent again with the same id.
CREATE TABLE outlast_deliveries (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    webhook_id   uuid NOT NULL REFERENCES outlast_webhooks (id) ON DELETE CASCADE,
    run_id       uuid NOT NULL REFERENCES outlast_runs (id) ON DELETE CASCADE,
    seq          bigint NOT NULL,
    type         text NOT NULL,
    payload      jsonb NOT NULL,
    status       text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivering', 'delivered', 'dead')),
    attempts     integer NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_by   text,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    delivered_at timestamptz,
    CONSTRAINT outlast_deliveries_once UNIQUE (webhook_id, run_id, seq)
);
CREATE INDEX outlast_deliveries_due ON outlast_deliveries (next_at)
    WHERE status IN ('pending', 'delivering');
CREATE INDEX outlast_deliveries_webhook ON outlast_deliveries (webhook_id, created_at DESC);

-- Every attempt, as the receiver answered it (or why it could not).
CREATE TABLE outlast_delivery_attempts (
    delivery_id uuid NOT NULL REFERENCES outlast_deliveries (id) ON DELETE CASCADE,
    n           integer NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    status_code integer,
    error       text,
    duration_ms double precision NOT NULL,
    worker_id   text NOT NULL,
    PRIMARY KEY (delivery_id, n)
);

CREATE FUNCTION outlast_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outlast_deliveries (webhook_id, run_id, seq, type, payload)
    SELECT w.id, NEW.run_id, NEW.seq, NEW.type,
           jsonb_build_object(
               'type', NEW.type,
               'timestamp', to_char(NEW.created_at AT TIME ZONE 'UTC',
                                    'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'data', jsonb_build_object(
                   'run_id', NEW.run_id, 'seq', NEW.seq, 'thread_id', r.thread_id,
                   'graph', r.graph, 'status', r.status, 'event', NEW.data))
    FROM outlast_runs r
    JOIN outlast_webhooks w
      ON w.run_id = r.id OR (w.run_id IS NULL AND w.principal = r.principal)
    WHERE r.id = NEW.run_id
      AND w.events ? NEW.type
      AND (NEW.type <> 'run.waiting' OR w.wait_kinds IS NULL
           OR NEW.data->'kinds' ?| ARRAY(SELECT jsonb_array_elements_text(w.wait_kinds)))
      AND NOT (w.once AND EXISTS (SELECT 1 FROM outlast_deliveries d WHERE d.webhook_id = w.id));
    IF FOUND THEN
        PERFORM pg_notify('outlast_webhooks', NEW.run_id::text);
    END IF;
    RETURN NULL;
END $$;

-- WHEN is checked without calling the function: the events no one can subscribe to
-- (every step of every run) cost one comparison.
CREATE TRIGGER outlast_outbox AFTER INSERT ON outlast_events FOR EACH ROW
    WHEN (NEW.type IN ('run.waiting', 'run.completed', 'run.failed', 'run.cancelled',
                       'supervisor.verdict', 'budget.checkpoint'))
    EXECUTE FUNCTION outlast_outbox();

-- 0015: crons (the LangGraph face's client.crons; store/cron_ops.py): a run request made on a
-- schedule. next_run_at is the next tick (NULL: never again, or disabled); firing_at a
-- tick a scheduler claimed and has not recorded as fired, held until claimed_until, after
-- which another scheduler fires it again under the same idempotency key. A thread's crons
-- go with the thread.
CREATE TABLE outlast_crons (
    cron_id          text PRIMARY KEY,
    principal        text NOT NULL DEFAULT '',
    assistant_id     text NOT NULL,
    thread_id        text REFERENCES outlast_threads (thread_id) ON DELETE CASCADE,
    schedule         text NOT NULL,
    timezone         text,
    payload          jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
    enabled          boolean NOT NULL DEFAULT true,
    end_time         timestamptz,
    on_run_completed text CHECK (on_run_completed IN ('delete', 'keep')),
    next_run_at      timestamptz,
    firing_at        timestamptz,
    claimed_until    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outlast_crons_principal ON outlast_crons (principal, created_at DESC);
CREATE INDEX outlast_crons_thread ON outlast_crons (thread_id);
-- what the schedulers look for: crons due, and claimed ticks whose claimer went away
CREATE INDEX outlast_crons_due ON outlast_crons (next_run_at)
    WHERE enabled AND firing_at IS NULL;
CREATE INDEX outlast_crons_firing ON outlast_crons (claimed_until) WHERE firing_at IS NOT NULL;

-- 0016: the sweeps' leases (store/sweeps.py): when each kind of sweep (items, threads) is
-- next due; a process sweeps only if it moved next_at forward itself.
CREATE TABLE outlast_sweeps (
    name    text PRIMARY KEY,
    next_at timestamptz NOT NULL
);
