-- Push notifications through a durable outbox. A subscription names the events it wants;
-- the trigger on outlast_events writes one delivery per matching subscription in the
-- transaction that writes the event, so an event is never committed without its
-- deliveries nor a delivery without its event, whichever statement wrote the event.
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
