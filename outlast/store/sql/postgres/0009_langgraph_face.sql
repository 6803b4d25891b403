-- The LangGraph face (outlast/api/lg): the entities LangGraph's clients name that the
-- native API does not, over the same runs and events.

-- Per-run options a LangGraph request sets (stream modes kept in the log, breakpoints,
-- context, durability, fork checkpoint, command): read by the execution.
ALTER TABLE outlast_runs ADD COLUMN options jsonb;

-- Threads as entities: they exist before their first run (POST /threads) and carry
-- metadata; a thread's status and values are derived from its runs and checkpoints.
CREATE TABLE outlast_threads (
    thread_id  text PRIMARY KEY,
    principal  text NOT NULL DEFAULT '',
    metadata   jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outlast_threads_principal ON outlast_threads (principal, created_at DESC);
CREATE INDEX outlast_threads_metadata ON outlast_threads USING gin (metadata jsonb_path_ops);

-- Threads that existed before this migration (runs made through /v1).
INSERT INTO outlast_threads (thread_id, principal, created_at, updated_at)
SELECT DISTINCT ON (thread_id) thread_id, principal, created_at, updated_at
FROM outlast_runs ORDER BY thread_id, pos
ON CONFLICT DO NOTHING;

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
