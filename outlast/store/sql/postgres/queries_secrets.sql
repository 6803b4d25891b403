-- Secrets stored sealed (store/secrets_ops.py): where they are, and their re-sealing
-- with the first key after a rotation. Each update is checked against what was read.

-- name: sc_webhooks
-- Subscriptions that hold sealed secrets (their secret or credentials in extra).
SELECT id, secret, extra FROM outlast_webhooks
WHERE secret IS NOT NULL OR extra ?| array['token', 'credentials']
ORDER BY id;

-- name: sc_waits
-- Auth waits whose answer is stored sealed.
SELECT id, answer FROM outlast_waits
WHERE kind = 'auth' AND answer ? 'sealed'
ORDER BY id;

-- name: sc_webhook_lock
-- A subscription's sealed fields, locked for re-sealing.
SELECT secret, extra FROM outlast_webhooks WHERE id = %(id)s FOR UPDATE;

-- name: sc_webhook_set
-- Store a subscription's re-sealed fields.
UPDATE outlast_webhooks SET secret = %(secret)s, extra = %(extra)s WHERE id = %(id)s;

-- name: sc_wait_lock
-- An auth wait's sealed answer, locked for re-sealing.
SELECT answer FROM outlast_waits WHERE id = %(id)s FOR UPDATE;

-- name: sc_wait_set
-- Store an auth wait's re-sealed answer.
UPDATE outlast_waits SET answer = %(answer)s WHERE id = %(id)s;
