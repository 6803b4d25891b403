-- Push notifications through a durable outbox (see the Postgres migration): the trigger
-- writes the deliveries of an event in the transaction that writes the event.
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
