-- Named queries of the LangGraph face (store/lgthreads.py); see the Postgres file.

-- name: lg_thread_insert
INSERT INTO outlast_threads (thread_id, principal, metadata, created_at, updated_at)
VALUES (:thread_id, :principal, :metadata, (julianday('now') - 2440587.5) * 86400.0,
        (julianday('now') - 2440587.5) * 86400.0)
ON CONFLICT (thread_id) DO NOTHING
RETURNING *;

-- name: lg_thread_get
SELECT * FROM outlast_threads WHERE thread_id = :thread_id;

-- name: lg_thread_set_metadata
UPDATE outlast_threads
SET metadata = :metadata, updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE thread_id = :thread_id
RETURNING *;

-- name: lg_thread_delete
DELETE FROM outlast_threads WHERE thread_id = :thread_id RETURNING thread_id;

-- name: lg_thread_delete_runs
DELETE FROM outlast_runs WHERE thread_id = :thread_id;

-- name: lg_threads_with_latest
-- No JSON containment in SQLite: :metadata is ignored here and filtered by the caller.
SELECT t.*, r.id AS run_id, r.status AS run_status, r.graph AS run_graph,
       r.error AS run_error,
       (SELECT count(*) FROM outlast_waits w
        WHERE w.run_id = r.id AND w.status = 'open'
          AND w.kind IN ('human', 'auth', 'budget', 'reconciliation')) AS asking
FROM outlast_threads t
LEFT JOIN outlast_runs r
       ON r.pos = (SELECT max(x.pos) FROM outlast_runs x WHERE x.thread_id = t.thread_id)
WHERE (:thread_id IS NULL OR t.thread_id = :thread_id)
  AND (:principal IS NULL OR t.principal = :principal)
  AND (:metadata IS NULL OR 1 = 1)
ORDER BY t.created_at DESC, t.thread_id;

-- name: lg_thread_runs_active
SELECT * FROM outlast_runs
WHERE thread_id = :thread_id AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos;

-- name: lg_asking
SELECT count(*) AS n FROM outlast_waits
WHERE run_id = :run_id AND status = 'open'
  AND kind IN ('human', 'auth', 'budget', 'reconciliation');

-- name: lg_lock_run
SELECT * FROM outlast_runs WHERE id = :run_id;

-- name: lg_cancel
-- (see the Postgres query)
UPDATE outlast_runs
SET status = CASE WHEN outlast_runs.status = 'running' OR x.ending IS NOT NULL THEN 'cancelling'
                  ELSE 'cancelled' END,
    ending = COALESCE(x.ending, outlast_runs.ending),
    error = json_object('type', :kind, 'reason', :reason,
                        'compensate', json(CASE WHEN :compensate THEN 'true' ELSE 'false' END)),
    worker_id = CASE WHEN outlast_runs.status = 'running' THEN outlast_runs.worker_id END,
    lease_expires_at = CASE WHEN outlast_runs.status = 'running'
                            THEN outlast_runs.lease_expires_at END,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
FROM (SELECT c.id,
             CASE WHEN c.status = 'running' THEN NULL
                  WHEN c.ending IS NOT NULL AND c.status = 'queued' THEN c.ending
                  WHEN :compensate AND c.ending IS NULL
                   AND EXISTS (SELECT 1 FROM outlast_effects e
                               WHERE e.run_id = c.id AND e.compensate IS NOT NULL
                                 AND e.status <> 'failed')
                  THEN json_object('status', 'cancelled', 'error', json_object(
                           'type', :kind, 'reason', :reason))
             END AS ending
      FROM outlast_runs c WHERE c.id = :run_id) AS x
WHERE outlast_runs.id = x.id AND outlast_runs.status IN ('queued', 'waiting', 'running')
RETURNING *;

-- name: lg_run_insert
INSERT INTO outlast_lg_runs (id, run_id, thread_id, principal, assistant_id, from_seq, kwargs,
                             metadata, multitask_strategy, idempotency_key, created_at)
VALUES (:id, :run_id, :thread_id, :principal, :assistant_id, :from_seq, :kwargs, :metadata,
        :multitask_strategy, :idempotency_key, (julianday('now') - 2440587.5) * 86400.0)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: lg_run_get
SELECT * FROM outlast_lg_runs WHERE id = :id;

-- name: lg_run_by_key
SELECT * FROM outlast_lg_runs WHERE principal = :principal AND idempotency_key = :key;

-- name: lg_runs_of_thread
SELECT * FROM outlast_lg_runs WHERE thread_id = :thread_id ORDER BY created_at DESC;

-- name: lg_runs_of_run
SELECT * FROM outlast_lg_runs WHERE run_id = :run_id ORDER BY from_seq;

-- name: lg_native_runs_of_thread
SELECT r.* FROM outlast_runs r
WHERE r.thread_id = :thread_id
  AND NOT EXISTS (SELECT 1 FROM outlast_lg_runs l WHERE l.run_id = r.id)
ORDER BY r.pos DESC;

-- name: lg_run_mark_deleted
UPDATE outlast_lg_runs SET deleted = 1 WHERE run_id = :run_id RETURNING id;

-- name: lg_thread_mark_temporary
UPDATE outlast_threads SET temporary = 1 WHERE thread_id = :thread_id;

-- name: lg_temporary_done
SELECT t.thread_id FROM outlast_threads t
WHERE t.temporary = 1
  AND NOT EXISTS (
      SELECT 1 FROM outlast_runs r
      WHERE r.thread_id = t.thread_id
        AND (r.status NOT IN ('completed', 'failed', 'cancelled')
             OR r.updated_at > (julianday('now') - 2440587.5) * 86400.0 - :age))
LIMIT 100;
