-- Secrets stored sealed (store/secrets_ops.py): where they are, and their re-sealing
-- with the first key after a rotation. Each update is checked against what was read.

-- name: sc_webhooks
SELECT id, secret, extra FROM outlast_webhooks
WHERE secret IS NOT NULL OR extra ?| array['token', 'credentials']
ORDER BY id;

-- name: sc_waits
SELECT id, answer FROM outlast_waits
WHERE kind = 'auth' AND answer ? 'sealed'
ORDER BY id;

-- name: sc_webhook_lock
SELECT secret, extra FROM outlast_webhooks WHERE id = %(id)s FOR UPDATE;

-- name: sc_webhook_set
UPDATE outlast_webhooks SET secret = %(secret)s, extra = %(extra)s WHERE id = %(id)s;

-- name: sc_wait_lock
SELECT answer FROM outlast_waits WHERE id = %(id)s FOR UPDATE;

-- name: sc_wait_set
UPDATE outlast_waits SET answer = %(answer)s WHERE id = %(id)s;
