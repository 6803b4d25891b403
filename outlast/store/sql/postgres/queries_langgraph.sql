-- Named queries of the LangGraph face (store/lgthreads.py). JSON parameters arrive as text.

-- name: lg_thread_insert
INSERT INTO outlast_threads (thread_id, principal, metadata)
VALUES (%(thread_id)s, %(principal)s, %(metadata)s::jsonb)
ON CONFLICT (thread_id) DO NOTHING
RETURNING *;

-- name: lg_thread_get
SELECT * FROM outlast_threads WHERE thread_id = %(thread_id)s;

-- name: lg_thread_set_metadata
UPDATE outlast_threads SET metadata = %(metadata)s::jsonb, updated_at = clock_timestamp()
WHERE thread_id = %(thread_id)s
RETURNING *;

-- name: lg_thread_delete
DELETE FROM outlast_threads WHERE thread_id = %(thread_id)s RETURNING thread_id;

-- name: lg_thread_delete_runs
-- events, waits, effects and LangGraph runs go with their runs (ON DELETE CASCADE)
DELETE FROM outlast_runs WHERE thread_id = %(thread_id)s;

-- name: lg_threads_with_latest
-- Each thread with its latest run and whether that run asks a client for something:
-- what a thread's status is derived from.
SELECT t.*, r.id AS run_id, r.status AS run_status, r.graph AS run_graph,
       r.error AS run_error,
       (SELECT count(*) FROM outlast_waits w
        WHERE w.run_id = r.id AND w.status = 'open'
          AND w.kind IN ('human', 'auth', 'budget', 'reconciliation')) AS asking
FROM outlast_threads t
LEFT JOIN outlast_runs r
       ON r.pos = (SELECT max(x.pos) FROM outlast_runs x WHERE x.thread_id = t.thread_id)
WHERE (%(thread_id)s::text IS NULL OR t.thread_id = %(thread_id)s)
  AND (%(principal)s::text IS NULL OR t.principal = %(principal)s)
  AND (%(metadata)s::jsonb IS NULL OR t.metadata @> %(metadata)s::jsonb)
ORDER BY t.created_at DESC, t.thread_id;

-- name: lg_thread_runs_active
SELECT * FROM outlast_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos;

-- name: lg_asking
SELECT count(*) AS n FROM outlast_waits
WHERE run_id = %(run_id)s AND status = 'open'
  AND kind IN ('human', 'auth', 'budget', 'reconciliation');

-- name: lg_lock_run
SELECT * FROM outlast_runs WHERE id = %(run_id)s FOR UPDATE;

-- name: lg_cancel
-- request_cancel's transition, inside a larger transaction (the caller appends the event);
-- compensations are owed only when the caller says so (not when new input supersedes it).
UPDATE outlast_runs o
SET status = CASE WHEN o.status = 'running' OR x.ending IS NOT NULL THEN 'cancelling'
                  ELSE 'cancelled' END,
    ending = COALESCE(x.ending, o.ending),
    error = jsonb_build_object('type', %(kind)s::text, 'reason', %(reason)s::text,
                               'compensate', %(compensate)s::boolean),
    worker_id = CASE WHEN o.status = 'running' THEN o.worker_id END,
    lease_expires_at = CASE WHEN o.status = 'running' THEN o.lease_expires_at END,
    updated_at = clock_timestamp()
FROM (SELECT c.id,
             CASE WHEN c.status = 'running' THEN NULL
                  WHEN c.ending IS NOT NULL AND c.status = 'queued' THEN c.ending
                  WHEN %(compensate)s::boolean AND c.ending IS NULL
                   AND EXISTS (SELECT 1 FROM outlast_effects e
                               WHERE e.run_id = c.id AND e.compensate IS NOT NULL
                                 AND e.status <> 'failed')
                  THEN jsonb_build_object('status', 'cancelled', 'error', jsonb_build_object(
                           'type', %(kind)s::text, 'reason', %(reason)s::text))
             END AS ending
      FROM outlast_runs c WHERE c.id = %(run_id)s FOR UPDATE) AS x
WHERE o.id = x.id AND o.status IN ('queued', 'waiting', 'running')
RETURNING o.*;

-- name: lg_run_insert
INSERT INTO outlast_lg_runs (id, run_id, thread_id, principal, assistant_id, from_seq, kwargs,
                             metadata, multitask_strategy, idempotency_key)
VALUES (%(id)s, %(run_id)s, %(thread_id)s, %(principal)s, %(assistant_id)s, %(from_seq)s,
        %(kwargs)s::jsonb, %(metadata)s::jsonb, %(multitask_strategy)s, %(idempotency_key)s)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: lg_run_get
SELECT * FROM outlast_lg_runs WHERE id = %(id)s;

-- name: lg_run_by_key
SELECT * FROM outlast_lg_runs WHERE principal = %(principal)s AND idempotency_key = %(key)s;

-- name: lg_runs_of_thread
SELECT * FROM outlast_lg_runs WHERE thread_id = %(thread_id)s ORDER BY created_at DESC;

-- name: lg_runs_of_run
SELECT * FROM outlast_lg_runs WHERE run_id = %(run_id)s ORDER BY from_seq;

-- name: lg_native_runs_of_thread
-- runs made through /v1: each is its own LangGraph run
SELECT r.* FROM outlast_runs r
WHERE r.thread_id = %(thread_id)s
  AND NOT EXISTS (SELECT 1 FROM outlast_lg_runs l WHERE l.run_id = r.id)
ORDER BY r.pos DESC;

-- name: lg_run_mark_deleted
UPDATE outlast_lg_runs SET deleted = true WHERE run_id = %(run_id)s RETURNING id;

-- name: lg_thread_mark_temporary
UPDATE outlast_threads SET temporary = true WHERE thread_id = %(thread_id)s;

-- name: lg_temporary_done
-- Temporary threads whose runs all ended more than %(age)s seconds ago.
SELECT t.thread_id FROM outlast_threads t
WHERE t.temporary
  AND NOT EXISTS (
      SELECT 1 FROM outlast_runs r
      WHERE r.thread_id = t.thread_id
        AND (r.status NOT IN ('completed', 'failed', 'cancelled')
             OR r.updated_at > now() - make_interval(secs => %(age)s::float8)))
LIMIT 100
FOR UPDATE OF t SKIP LOCKED;
