-- Push notifications: subscriptions and the outbox (outlast/store/outbox_ops.py). The
-- deliveries themselves are written by the outlast_outbox trigger (0012_webhooks.sql).

-- name: wh_insert
-- A new subscription, or nothing if its idempotency key exists.
INSERT INTO outlast_webhooks (id, principal, run_id, url, events, format, secret, extra, once,
                              wait_kinds, idempotency_key, fingerprint)
VALUES (%(id)s, %(principal)s, %(run_id)s, %(url)s, %(events)s, %(format)s, %(secret)s,
        %(extra)s, %(once)s, %(wait_kinds)s, %(idempotency_key)s, %(fingerprint)s)
ON CONFLICT (principal, idempotency_key) DO NOTHING
RETURNING *;

-- name: wh_by_key
-- The subscription a principal made under an idempotency key.
SELECT * FROM outlast_webhooks
WHERE principal = %(principal)s AND idempotency_key = %(key)s;

-- name: wh_get
-- One subscription of a principal.
SELECT * FROM outlast_webhooks WHERE id = %(id)s AND principal = %(principal)s;

-- name: wh_list
-- A principal's subscriptions that are not a single run's.
SELECT * FROM outlast_webhooks
WHERE principal = %(principal)s AND run_id IS NULL
ORDER BY created_at, id;

-- name: wh_of_run
-- The subscriptions made for one run.
SELECT * FROM outlast_webhooks WHERE run_id = %(run_id)s ORDER BY created_at, id;

-- name: wh_delete
-- Delete a principal's subscription.
DELETE FROM outlast_webhooks WHERE id = %(id)s AND principal = %(principal)s RETURNING id;

-- name: dl_list
-- A subscription's deliveries, newest first, of one status if given.
SELECT * FROM outlast_deliveries
WHERE webhook_id = %(webhook_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY created_at DESC, id
LIMIT %(limit)s;

-- name: dl_attempts
-- The attempts of some deliveries (a JSON array of ids), in order.
SELECT * FROM outlast_delivery_attempts
WHERE delivery_id IN (SELECT value::uuid FROM jsonb_array_elements_text(%(ids)s::jsonb))
ORDER BY delivery_id, n;

-- name: dl_claim
-- Claim due deliveries for a worker, oldest due first, disjoint between workers.
-- The one claim statement: due deliveries, oldest due first, each locked or skipped, so
-- that concurrent workers take disjoint sets. next_at becomes the claim's expiry.
WITH due AS (
    SELECT id FROM outlast_deliveries
    WHERE status IN ('pending', 'delivering') AND next_at <= now()
    ORDER BY next_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE outlast_deliveries d
SET status = 'delivering', attempts = d.attempts + 1, claimed_by = %(worker_id)s,
    next_at = now() + make_interval(secs => %(hold)s::float8)
FROM due WHERE d.id = due.id
RETURNING d.*;

-- name: dl_webhooks
-- The subscriptions of some deliveries (a JSON array of ids).
SELECT * FROM outlast_webhooks
WHERE id IN (SELECT value::uuid FROM jsonb_array_elements_text(%(ids)s::jsonb));

-- name: dl_attempt
-- Record one attempt of a delivery (once per number).
INSERT INTO outlast_delivery_attempts (delivery_id, n, status_code, error, duration_ms,
                                       worker_id)
VALUES (%(id)s, %(n)s, %(status_code)s, %(error)s, %(duration_ms)s, %(worker_id)s)
ON CONFLICT (delivery_id, n) DO NOTHING;

-- name: dl_settle
-- Record how a claimed delivery's attempt ended, if this worker still holds it.
UPDATE outlast_deliveries
SET status = %(status)s, last_error = %(error)s, claimed_by = NULL,
    next_at = CASE WHEN %(retry_in)s::float8 IS NULL THEN next_at
                   ELSE now() + make_interval(secs => %(retry_in)s::float8) END,
    delivered_at = CASE WHEN %(status)s = 'delivered' THEN clock_timestamp() END
WHERE id = %(id)s AND claimed_by = %(worker_id)s AND attempts = %(n)s
      AND status = 'delivering'
RETURNING id;

-- name: dl_get
-- One delivery of a subscription, locked for a redelivery.
SELECT * FROM outlast_deliveries WHERE id = %(id)s AND webhook_id = %(webhook_id)s
FOR UPDATE;

-- name: dl_revive
-- Send a delivery again: pending and due now.
UPDATE outlast_deliveries SET status = 'pending', next_at = now(), last_error = NULL
WHERE id = %(id)s
RETURNING *;

-- name: dl_next_due
-- Seconds until the next pending delivery is due; NULL when none is pending (not 0:
-- greatest() ignores a NULL, and a deliverer told 0 polls without pause).
SELECT CASE WHEN min(next_at) IS NOT NULL
            THEN greatest(0, extract(epoch FROM (min(next_at) - now()))) END AS seconds
FROM outlast_deliveries WHERE status IN ('pending', 'delivering');

-- name: dl_count
-- How many deliveries have each status.
SELECT status, count(*) AS n FROM outlast_deliveries GROUP BY status;
