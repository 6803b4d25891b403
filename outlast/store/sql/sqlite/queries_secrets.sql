-- Secrets stored sealed (see the Postgres file; same names, same meaning). Writes run in
-- BEGIN IMMEDIATE, so what was read cannot change before the update.

-- name: sc_webhooks
-- Subscriptions that hold sealed secrets (their secret or credentials in extra).
SELECT id, secret, extra FROM outlast_webhooks
WHERE secret IS NOT NULL
   OR json_extract(extra, '$.token') IS NOT NULL
   OR json_extract(extra, '$.credentials') IS NOT NULL
ORDER BY id;

-- name: sc_waits
-- Auth waits whose answer is stored sealed.
SELECT id, answer FROM outlast_waits
WHERE kind = 'auth' AND json_valid(answer) AND json_extract(answer, '$.sealed') IS NOT NULL
ORDER BY id;

-- name: sc_webhook_lock
-- A subscription's sealed fields, locked for re-sealing.
SELECT secret, extra FROM outlast_webhooks WHERE id = :id;

-- name: sc_webhook_set
-- Store a subscription's re-sealed fields.
UPDATE outlast_webhooks SET secret = :secret, extra = :extra WHERE id = :id;

-- name: sc_wait_lock
-- An auth wait's sealed answer, locked for re-sealing.
SELECT answer FROM outlast_waits WHERE id = :id;

-- name: sc_wait_set
-- Store an auth wait's re-sealed answer.
UPDATE outlast_waits SET answer = :answer WHERE id = :id;
