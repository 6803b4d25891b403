-- Named queries for the SQLite store (named :parameters). Multi-step writes run inside
-- BEGIN IMMEDIATE, which takes the database write lock up front, so seq assignment and
-- lease checks are serialized exactly as Postgres serializes them with row locks.
-- Database time: (julianday('now') - 2440587.5) * 86400.0 is unix seconds, in ms.

-- name: insert_run
INSERT INTO outlast_runs (id, principal, thread_id, graph, status, input, config, metadata,
                          budget, idempotency_key, fingerprint, max_attempts, last_seq,
                          created_at, updated_at, options)
VALUES (:id, :principal, :thread_id, :graph, 'queued', :input, :config, :metadata, :budget,
        :idempotency_key, :fingerprint, :max_attempts, 1,
        (julianday('now') - 2440587.5) * 86400.0, (julianday('now') - 2440587.5) * 86400.0,
        :options)
ON CONFLICT (principal, idempotency_key) DO NOTHING
RETURNING *;

-- name: touch_thread
-- the thread exists from its first run on (LangGraph's clients list threads)
INSERT INTO outlast_threads (thread_id, principal, created_at, updated_at)
VALUES (:thread_id, :principal, (julianday('now') - 2440587.5) * 86400.0,
        (julianday('now') - 2440587.5) * 86400.0)
ON CONFLICT (thread_id) DO UPDATE SET updated_at = excluded.updated_at;

-- name: insert_event
INSERT INTO outlast_events (run_id, seq, type, data, created_at)
VALUES (:run_id, :seq, :type, :data, (julianday('now') - 2440587.5) * 86400.0);

-- name: get_by_key
SELECT * FROM outlast_runs WHERE principal = :principal AND idempotency_key = :key;

-- name: get_run
SELECT * FROM outlast_runs WHERE id = :id;

-- name: list_runs
SELECT * FROM outlast_runs
WHERE principal = :principal
  AND (:thread_id IS NULL OR thread_id = :thread_id)
  AND (:status IS NULL OR status = :status)
  AND (:before IS NULL OR pos < :before)
ORDER BY pos DESC
LIMIT :limit;

-- name: read_events
SELECT run_id, seq, type, data, created_at FROM outlast_events
WHERE run_id = :run_id AND seq > :after
ORDER BY seq
LIMIT :limit;

-- name: first_retained_seq
SELECT min(seq) AS seq FROM outlast_events WHERE run_id = :run_id;

-- name: prune_events
DELETE FROM outlast_events WHERE run_id = :run_id AND seq <= :upto RETURNING seq;

-- name: count_runs_by_status
-- /metrics, at scrape time: one pass over the runs.
SELECT status, count(*) AS n FROM outlast_runs GROUP BY status;

-- name: claim
-- (a cancelling run without a worker is claimed to compensate: see the Postgres query)
UPDATE outlast_runs
SET status = CASE WHEN status = 'cancelling' THEN 'cancelling' ELSE 'running' END,
    worker_id = :worker_id, lease_epoch = lease_epoch + 1,
    lease_expires_at = (julianday('now') - 2440587.5) * 86400.0 + :ttl,
    attempts = attempts + 1, last_seq = last_seq + 1,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id IN (
    -- One active run per thread (see the Postgres query).
    SELECT q.id FROM outlast_runs q
    WHERE (q.status = 'queued' OR (q.status = 'cancelling' AND q.worker_id IS NULL))
      AND NOT EXISTS (
          SELECT 1 FROM outlast_runs o
          WHERE o.thread_id = q.thread_id AND o.id <> q.id
            AND (o.status IN ('running', 'cancelling', 'waiting')
                 OR (o.status = 'queued' AND o.pos < q.pos)))
    ORDER BY q.pos LIMIT :limit)
RETURNING *;

-- name: claim_one
-- Eager start (see the Postgres query); the write transaction is the thread's lock here.
UPDATE outlast_runs
SET status = 'running', worker_id = :worker_id, lease_epoch = lease_epoch + 1,
    lease_expires_at = (julianday('now') - 2440587.5) * 86400.0 + :ttl,
    attempts = attempts + 1, last_seq = last_seq + 1,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :id AND status = 'queued'
  AND NOT EXISTS (
      SELECT 1 FROM outlast_runs o
      WHERE o.thread_id = outlast_runs.thread_id AND o.id <> outlast_runs.id
        AND o.status IN ('queued', 'running', 'cancelling', 'waiting'))
RETURNING *;

-- name: renew
UPDATE outlast_runs
SET lease_expires_at = (julianday('now') - 2440587.5) * 86400.0 + :ttl
WHERE worker_id = :worker_id AND status IN ('running', 'cancelling')
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
RETURNING id, lease_epoch, status;

-- name: bump_seq
UPDATE outlast_runs
SET last_seq = last_seq + :n, updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING last_seq;

-- name: finish
UPDATE outlast_runs
SET status = :status, result = :result, error = :error, worker_id = NULL,
    lease_expires_at = NULL, activity = NULL, last_seq = last_seq + 1,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id, last_seq, status,
          -- the queue hears of it only if the thread has a run queued behind (see Postgres)
          EXISTS (SELECT 1 FROM outlast_runs o
                  WHERE o.thread_id = outlast_runs.thread_id AND o.status = 'queued') AS successor;

-- name: release
-- (owing compensations, a cancelling run stays cancelling: see the Postgres query)
UPDATE outlast_runs
SET status = CASE WHEN outlast_runs.status <> 'cancelling' THEN 'queued'
                  WHEN x.ending IS NOT NULL THEN 'cancelling'
                  ELSE 'cancelled' END,
    ending = x.ending,
    attempts = CASE WHEN outlast_runs.status = 'cancelling' AND x.ending IS NULL
                    THEN outlast_runs.attempts ELSE outlast_runs.attempts - 1 END,
    error = CASE WHEN outlast_runs.status = 'cancelling' AND x.ending IS NULL
                 THEN json_object('type', 'cancelled', 'reason', 'cancelled while draining')
                 ELSE outlast_runs.error END,
    worker_id = NULL, lease_expires_at = NULL, activity = NULL,
    lease_epoch = outlast_runs.lease_epoch + 1, last_seq = outlast_runs.last_seq + 1,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
FROM (SELECT c.id,
             CASE WHEN c.ending IS NOT NULL THEN c.ending
                  WHEN c.status = 'cancelling'
                   AND COALESCE(json_extract(c.error, '$.compensate'), 1)
                   AND EXISTS (SELECT 1 FROM outlast_effects e
                               WHERE e.run_id = c.id AND e.compensate IS NOT NULL
                                 AND e.status <> 'failed')
                  THEN json_object('status', 'cancelled', 'error', json_object(
                           'type', COALESCE(json_extract(c.error, '$.type'), 'cancelled'),
                           'reason', COALESCE(json_extract(c.error, '$.reason'), 'cancelled')))
             END AS ending
      FROM outlast_runs c WHERE c.id = :run_id) AS x
WHERE outlast_runs.id = x.id AND outlast_runs.worker_id = :worker_id
  AND outlast_runs.lease_epoch = :epoch AND outlast_runs.status IN ('running', 'cancelling')
RETURNING outlast_runs.id, outlast_runs.last_seq, outlast_runs.status;

-- name: cancel
-- (owing compensations: see the Postgres query)
UPDATE outlast_runs
SET status = CASE WHEN outlast_runs.status = 'running' OR x.ending IS NOT NULL THEN 'cancelling'
                  ELSE 'cancelled' END,
    ending = COALESCE(x.ending, outlast_runs.ending),
    error = json_object('type', 'cancelled', 'reason', :reason),
    worker_id = CASE WHEN outlast_runs.status = 'running' THEN outlast_runs.worker_id END,
    lease_expires_at = CASE WHEN outlast_runs.status = 'running'
                            THEN outlast_runs.lease_expires_at END,
    last_seq = outlast_runs.last_seq + 1, updated_at = (julianday('now') - 2440587.5) * 86400.0
FROM (SELECT c.id,
             CASE WHEN c.status = 'running' THEN NULL
                  WHEN c.ending IS NOT NULL AND c.status = 'queued' THEN c.ending
                  WHEN c.ending IS NULL
                   AND EXISTS (SELECT 1 FROM outlast_effects e
                               WHERE e.run_id = c.id AND e.compensate IS NOT NULL
                                 AND e.status <> 'failed')
                  THEN json_object('status', 'cancelled', 'error', json_object(
                           'type', 'cancelled', 'reason', :reason))
             END AS ending
      FROM outlast_runs c WHERE c.id = :run_id) AS x
WHERE outlast_runs.id = x.id AND outlast_runs.status IN ('queued', 'waiting', 'running')
RETURNING *;

-- name: reap
-- (a run that owes compensations goes back to a worker: see the Postgres query)
UPDATE outlast_runs
SET status = CASE WHEN x.ending IS NULL AND outlast_runs.status = 'cancelling' THEN 'cancelled'
                  WHEN x.ending IS NULL AND outlast_runs.attempts >= outlast_runs.max_attempts
                  THEN 'failed'
                  WHEN outlast_runs.status = 'cancelling' THEN 'cancelling'
                  ELSE 'queued' END,
    ending = x.ending,
    error = CASE WHEN x.ending IS NOT NULL THEN outlast_runs.error
                 WHEN outlast_runs.status = 'cancelling'
                 THEN json_object('type', 'cancelled', 'reason', 'worker lost while cancelling')
                 WHEN outlast_runs.attempts >= outlast_runs.max_attempts
                 THEN json_object('type', 'worker_lost',
                                  'reason', 'worker lease expired on the last attempt',
                                  'attempts', outlast_runs.attempts)
                 ELSE outlast_runs.error END,
    worker_id = NULL, lease_expires_at = NULL, activity = NULL,
    lease_epoch = outlast_runs.lease_epoch + 1, last_seq = outlast_runs.last_seq + 1,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
FROM (SELECT r.id,
             CASE WHEN r.ending IS NOT NULL THEN r.ending
                  WHEN NOT EXISTS (SELECT 1 FROM outlast_effects e
                                   WHERE e.run_id = r.id AND e.compensate IS NOT NULL
                                     AND e.status <> 'failed') THEN NULL
                  WHEN r.status = 'cancelling' AND COALESCE(json_extract(r.error, '$.compensate'), 1)
                  THEN json_object('status', 'cancelled', 'error', json_object(
                           'type', COALESCE(json_extract(r.error, '$.type'), 'cancelled'),
                           'reason', COALESCE(json_extract(r.error, '$.reason'), 'cancelled')))
                  WHEN r.status = 'running' AND r.attempts >= r.max_attempts
                  THEN json_object('status', 'failed', 'error', json_object(
                           'type', 'worker_lost',
                           'reason', 'worker lease expired on the last attempt',
                           'attempts', r.attempts))
             END AS ending
      FROM outlast_runs r
      WHERE r.status IN ('running', 'cancelling')
        AND r.lease_expires_at < (julianday('now') - 2440587.5) * 86400.0
      ORDER BY r.lease_expires_at LIMIT :limit) AS x
WHERE outlast_runs.id = x.id
RETURNING outlast_runs.id, outlast_runs.status, outlast_runs.last_seq, outlast_runs.attempts;

-- ---------------------------------------------------------------------------------------
-- Waits, signals, threads, retention (see the Postgres file; same names, same meaning).

-- name: bump_any
UPDATE outlast_runs SET last_seq = last_seq + :n,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :run_id
RETURNING last_seq;

-- name: w_insert
INSERT INTO outlast_waits (id, run_id, interrupt_id, kind, status, object, prompt, schema,
                           event_keys, has_default, default_answer, probe, since, wake_at,
                           lease_expires_at)
VALUES (:id, :run_id, :interrupt_id, :kind, 'open', :object, :prompt, :schema, :event_keys,
        :has_default, :default_answer, :probe, (julianday('now') - 2440587.5) * 86400.0,
        COALESCE(:wake_at, (julianday('now') - 2440587.5) * 86400.0 + :wake_in),
        COALESCE(:wake_at, (julianday('now') - 2440587.5) * 86400.0 + :wake_in) + :lease_grace)
RETURNING *;

-- name: w_find_live
SELECT * FROM outlast_waits
WHERE run_id = :run_id AND interrupt_id = :interrupt_id AND status IN ('open', 'answered');

-- name: w_resume_consumed
UPDATE outlast_waits SET status = 'resumed'
WHERE run_id = :run_id AND status = 'answered'
  AND interrupt_id NOT IN (SELECT value FROM json_each(:pending));

-- name: w_count_answered
SELECT count(*) AS n FROM outlast_waits WHERE run_id = :run_id AND status = 'answered';

-- name: w_park_run
UPDATE outlast_runs
-- Parking is not a failed attempt: like a release, it gives the attempt back.
SET attempts = attempts - 1,
    -- (a cancelling run with its ending decided parks on a compensation's reconciliation)
    status = CASE WHEN status = 'cancelling' AND ending IS NULL THEN 'cancelled'
                  ELSE :status END,
    worker_id = NULL, lease_expires_at = NULL, activity = NULL, lease_epoch = lease_epoch + 1,
    updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING status;

-- name: w_get
SELECT * FROM outlast_waits WHERE id = :id;

-- name: w_answer
UPDATE outlast_waits
SET status = 'answered', answer_key = :key, answer = :answer, answered_how = :how,
    answered_at = (julianday('now') - 2440587.5) * 86400.0,
    last_signal_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :id AND status = 'open'
RETURNING *;

-- name: w_read
-- w_get without the row lock, for reads.
SELECT * FROM outlast_waits WHERE id = :id;

-- name: w_open_of_runs
-- The open waits of a page of runs (a JSON array of run ids), in one query.
SELECT * FROM outlast_waits
WHERE run_id IN (SELECT value FROM json_each(:run_ids)) AND status = 'open'
ORDER BY run_id, since, id;

-- name: w_list
SELECT * FROM outlast_waits
WHERE run_id = :run_id AND (:status IS NULL OR status = :status)
ORDER BY since, id;

-- name: w_settle
UPDATE outlast_waits
SET status = CASE WHEN status = 'answered' THEN 'resumed' ELSE 'withdrawn' END
WHERE run_id = :run_id AND status IN ('open', 'answered')
RETURNING id;

-- name: run_requeue_if_waiting
UPDATE outlast_runs SET status = 'queued', updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :run_id AND status = 'waiting'
RETURNING id;

-- name: sig_insert
INSERT INTO outlast_signals (key, payload, principal, created_at)
VALUES (:key, :payload, :principal, (julianday('now') - 2440587.5) * 86400.0)
RETURNING id;

-- name: sig_match
SELECT w.* FROM outlast_waits w JOIN outlast_runs r ON r.id = w.run_id
WHERE w.status = 'open' AND w.kind = 'event'
  AND EXISTS (SELECT 1 FROM json_each(w.event_keys) WHERE value = :key)
  AND r.principal = :principal
ORDER BY w.since;

-- name: sig_lookback
SELECT key, payload FROM outlast_signals
WHERE key IN (SELECT value FROM json_each(:keys))
  AND principal = (SELECT principal FROM outlast_runs WHERE id = :run_id)
  AND created_at >= (julianday('now') - 2440587.5) * 86400.0 - :lookback
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: w_due
UPDATE outlast_waits SET wake_at = (julianday('now') - 2440587.5) * 86400.0 + :hold
WHERE id IN (SELECT id FROM outlast_waits
             WHERE status = 'open' AND wake_at <= (julianday('now') - 2440587.5) * 86400.0
             ORDER BY wake_at LIMIT :limit)
RETURNING *;

-- name: w_next_due
SELECT min(wake_at) - (julianday('now') - 2440587.5) * 86400.0 AS seconds
FROM outlast_waits WHERE status = 'open' AND wake_at IS NOT NULL;

-- name: w_probe_ok
UPDATE outlast_waits
SET renewals = renewals + 1, failures = 0,
    last_signal_at = (julianday('now') - 2440587.5) * 86400.0,
    wake_at = (julianday('now') - 2440587.5) * 86400.0 + :every,
    lease_expires_at = (julianday('now') - 2440587.5) * 86400.0 + 2 * :every
WHERE id = :id AND status = 'open'
RETURNING *;

-- name: w_probe_failed
UPDATE outlast_waits
SET failures = failures + 1, wake_at = (julianday('now') - 2440587.5) * 86400.0 + :every
WHERE id = :id AND status = 'open'
RETURNING *;

-- name: thread_lock
SELECT 1;

-- name: thread_active
SELECT * FROM outlast_runs
WHERE thread_id = :thread_id AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos LIMIT 1;

-- name: thread_latest
SELECT * FROM outlast_runs WHERE thread_id = :thread_id ORDER BY pos DESC LIMIT 1;

-- name: prune_by_count
DELETE FROM outlast_events
WHERE seq <= (SELECT r.last_seq FROM outlast_runs r WHERE r.id = outlast_events.run_id) - :keep;

-- name: prune_by_age
DELETE FROM outlast_events
WHERE created_at < (julianday('now') - 2440587.5) * 86400.0 - :age;

-- name: w_withdraw
UPDATE outlast_waits SET status = 'withdrawn'
WHERE run_id = :run_id AND status IN ('open', 'answered');

-- name: set_activity
UPDATE outlast_runs
SET activity = :activity, usage = COALESCE(:usage, usage)
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_supervision
UPDATE outlast_runs SET supervision = :supervision
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_ending
UPDATE outlast_runs SET ending = :ending, updated_at = (julianday('now') - 2440587.5) * 86400.0
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_budget
UPDATE outlast_runs SET budget = :budget
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: w_consume
UPDATE outlast_waits SET status = 'resumed' WHERE id = :id AND status = 'answered'
RETURNING id;

-- name: e_begin
INSERT INTO outlast_effects (run_id, key, tool, args_hash, args, idempotent, status, started_at,
                             compensate, compensates)
VALUES (:run_id, :key, :tool, :args_hash, :args, :idempotent, 'started',
        (julianday('now') - 2440587.5) * 86400.0, :compensate, :compensates)
ON CONFLICT (run_id, key) DO NOTHING
RETURNING *;

-- name: e_get
SELECT * FROM outlast_effects WHERE run_id = :run_id AND key = :key;

-- name: e_retry
UPDATE outlast_effects SET status = 'started', calls = calls + 1, error = NULL
WHERE run_id = :run_id AND key = :key
RETURNING *;

-- name: e_finish
UPDATE outlast_effects
SET status = :status, result = :result, error = :error,
    finished_at = (julianday('now') - 2440587.5) * 86400.0
WHERE run_id = :run_id AND key = :key
RETURNING *;

-- name: e_list
SELECT * FROM outlast_effects WHERE run_id = :run_id ORDER BY started_at, key;

-- name: count_active
SELECT count(*) AS n FROM outlast_runs
WHERE principal = :principal AND status IN ('queued', 'running', 'cancelling');
