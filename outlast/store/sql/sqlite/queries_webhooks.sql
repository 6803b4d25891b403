-- Push notifications: subscriptions and the outbox (outlast/store/outbox_ops.py). The
-- deliveries themselves are written by the outlast_outbox trigger (0012_webhooks.sql).

-- name: wh_insert
-- A new subscription, or nothing if its idempotency key exists.
INSERT INTO outlast_webhooks (id, principal, run_id, url, events, format, secret, extra, once,
                              wait_kinds, idempotency_key, fingerprint, created_at)
VALUES (:id, :principal, :run_id, :url, :events, :format, :secret, :extra, :once,
        :wait_kinds, :idempotency_key, :fingerprint, (SELECT now FROM outlast_clock))
ON CONFLICT (principal, idempotency_key) DO NOTHING
RETURNING *;

-- name: wh_by_key
-- The subscription a principal made under an idempotency key.
SELECT * FROM outlast_webhooks WHERE principal = :principal AND idempotency_key = :key;

-- name: wh_get
-- One subscription of a principal.
SELECT * FROM outlast_webhooks WHERE id = :id AND principal = :principal;

-- name: wh_list
-- A principal's subscriptions that are not a single run's.
SELECT * FROM outlast_webhooks
WHERE principal = :principal AND run_id IS NULL
ORDER BY created_at, id;

-- name: wh_of_run
-- The subscriptions made for one run.
SELECT * FROM outlast_webhooks WHERE run_id = :run_id ORDER BY created_at, id;

-- name: wh_delete
-- Delete a principal's subscription.
DELETE FROM outlast_webhooks WHERE id = :id AND principal = :principal RETURNING id;

-- name: dl_list
-- A subscription's deliveries, newest first, of one status if given.
SELECT * FROM outlast_deliveries
WHERE webhook_id = :webhook_id AND (:status IS NULL OR status = :status)
ORDER BY created_at DESC, id
LIMIT :limit;

-- name: dl_attempts
-- The attempts of some deliveries (a JSON array of ids), in order.
SELECT * FROM outlast_delivery_attempts
WHERE delivery_id IN (SELECT value FROM json_each(:ids))
ORDER BY delivery_id, n;

-- name: dl_claim
-- Claim due deliveries for a worker, oldest due first, disjoint between workers.
-- One writer at a time (BEGIN IMMEDIATE): the claim is disjoint by the write lock.
UPDATE outlast_deliveries
SET status = 'delivering', attempts = attempts + 1, claimed_by = :worker_id,
    next_at = (SELECT now FROM outlast_clock) + :hold
WHERE id IN (SELECT id FROM outlast_deliveries
             WHERE status IN ('pending', 'delivering')
               AND next_at <= (SELECT now FROM outlast_clock)
             ORDER BY next_at LIMIT :limit)
RETURNING *;

-- name: dl_webhooks
-- The subscriptions of some deliveries (a JSON array of ids).
SELECT * FROM outlast_webhooks WHERE id IN (SELECT value FROM json_each(:ids));

-- name: dl_attempt
-- Record one attempt of a delivery (once per number).
INSERT INTO outlast_delivery_attempts (delivery_id, n, at, status_code, error, duration_ms,
                                       worker_id)
VALUES (:id, :n, (SELECT now FROM outlast_clock), :status_code, :error,
        :duration_ms, :worker_id)
ON CONFLICT (delivery_id, n) DO NOTHING;

-- name: dl_settle
-- Record how a claimed delivery's attempt ended, if this worker still holds it.
UPDATE outlast_deliveries
SET status = :status, last_error = :error, claimed_by = NULL,
    next_at = CASE WHEN :retry_in IS NULL THEN next_at
                   ELSE (SELECT now FROM outlast_clock) + :retry_in END,
    delivered_at = CASE WHEN :status = 'delivered'
                        THEN (SELECT now FROM outlast_clock) END
WHERE id = :id AND claimed_by = :worker_id AND attempts = :n AND status = 'delivering'
RETURNING id;

-- name: dl_get
-- One delivery of a subscription, locked for a redelivery.
SELECT * FROM outlast_deliveries WHERE id = :id AND webhook_id = :webhook_id;

-- name: dl_revive
-- Send a delivery again: pending and due now.
UPDATE outlast_deliveries
SET status = 'pending', next_at = (SELECT now FROM outlast_clock), last_error = NULL
WHERE id = :id
RETURNING *;

-- name: dl_next_due
-- Seconds until the next pending delivery is due.
SELECT max(0, min(next_at) - (SELECT now FROM outlast_clock)) AS seconds
FROM outlast_deliveries WHERE status IN ('pending', 'delivering');

-- name: dl_count
-- How many deliveries have each status.
SELECT status, count(*) AS n FROM outlast_deliveries GROUP BY status;
