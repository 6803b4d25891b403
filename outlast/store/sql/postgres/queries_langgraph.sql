-- Named queries of the LangGraph face (store/lgthreads.py). JSON parameters arrive as text.

-- name: lg_thread_insert
-- A new thread, or nothing if it exists.
INSERT INTO outlast_threads (thread_id, principal, metadata, ttl_minutes, ttl_strategy)
VALUES (%(thread_id)s, %(principal)s, %(metadata)s::jsonb, %(ttl)s::float8, %(strategy)s)
ON CONFLICT (thread_id) DO NOTHING
RETURNING *;

-- name: lg_thread_get
-- One thread.
SELECT * FROM outlast_threads WHERE thread_id = %(thread_id)s;

-- name: lg_thread_set_metadata
-- Replace a thread's metadata.
UPDATE outlast_threads SET metadata = %(metadata)s::jsonb, updated_at = clock_timestamp()
WHERE thread_id = %(thread_id)s
RETURNING *;

-- name: lg_thread_delete
-- Delete a thread's row.
DELETE FROM outlast_threads WHERE thread_id = %(thread_id)s RETURNING thread_id;

-- name: lg_thread_delete_runs
-- Delete a thread's runs, with their events, waits, effects, LangGraph runs, but those in
-- `keep` (a JSON array of ids: runs compensating what they did, lgthreads.py).
DELETE FROM outlast_runs
WHERE thread_id = %(thread_id)s
  AND id::text NOT IN (SELECT jsonb_array_elements_text(%(keep)s::jsonb));

-- name: lg_threads_with_latest
-- Threads with their latest run and whether it asks a client something.
-- (What a thread's status is derived from.)
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
-- A thread's active (queued, running, cancelling, waiting) runs, in order.
SELECT * FROM outlast_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos;

-- name: lg_asking
-- How many of a run's open waits ask a client for something.
SELECT count(*) AS n FROM outlast_waits
WHERE run_id = %(run_id)s AND status = 'open'
  AND kind IN ('human', 'auth', 'budget', 'reconciliation');

-- name: lg_run_insert
-- A new LangGraph run (a stretch of an outlast run), or nothing if it exists.
INSERT INTO outlast_lg_runs (id, run_id, thread_id, principal, assistant_id, from_seq, kwargs,
                             metadata, multitask_strategy, idempotency_key)
VALUES (%(id)s, %(run_id)s, %(thread_id)s, %(principal)s, %(assistant_id)s, %(from_seq)s,
        %(kwargs)s::jsonb, %(metadata)s::jsonb, %(multitask_strategy)s, %(idempotency_key)s)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: lg_run_get
-- One LangGraph run by id.
SELECT * FROM outlast_lg_runs WHERE id = %(id)s;

-- name: lg_run_by_key
-- The LangGraph run a principal made under an idempotency key.
SELECT * FROM outlast_lg_runs WHERE principal = %(principal)s AND idempotency_key = %(key)s;

-- name: lg_runs_of_thread
-- A thread's LangGraph runs, newest first.
SELECT * FROM outlast_lg_runs WHERE thread_id = %(thread_id)s ORDER BY created_at DESC;

-- name: lg_runs_of_run
-- The LangGraph runs that are stretches of one outlast run, oldest first.
SELECT * FROM outlast_lg_runs WHERE run_id = %(run_id)s ORDER BY from_seq;

-- name: lg_native_runs_of_thread
-- A thread's runs made through /v1 (each its own LangGraph run).
SELECT r.* FROM outlast_runs r
WHERE r.thread_id = %(thread_id)s
  AND NOT EXISTS (SELECT 1 FROM outlast_lg_runs l WHERE l.run_id = r.id)
ORDER BY r.pos DESC;

-- name: lg_run_resume_with
-- What a resume sets beside its answers (LangGraph's Command update and goto), kept in the
-- run's options until the attempt that consumes those answers feeds them (runtime/start.py).
UPDATE outlast_runs
SET options = coalesce(options, '{}'::jsonb)
              || jsonb_build_object('resume_with', %(resume_with)s::jsonb)
WHERE id = %(id)s
RETURNING id;

-- name: lg_run_mark_deleted
-- Hide the LangGraph runs of an outlast run.
UPDATE outlast_lg_runs SET deleted = true WHERE run_id = %(run_id)s RETURNING id;

-- name: lg_thread_mark_temporary
-- Mark a thread temporary (deleted a while after its runs end).
UPDATE outlast_threads SET temporary = true WHERE thread_id = %(thread_id)s;

-- name: lg_temporary_done
-- Temporary threads whose runs all ended more than `age` seconds ago.
SELECT t.thread_id FROM outlast_threads t
WHERE t.temporary
  AND NOT EXISTS (
      SELECT 1 FROM outlast_runs r
      WHERE r.thread_id = t.thread_id
        AND (r.status NOT IN ('completed', 'failed', 'cancelled')
             OR r.updated_at > now() - make_interval(secs => %(age)s::float8)))
LIMIT 100
FOR UPDATE OF t SKIP LOCKED;

-- name: lg_thread_set_ttl
-- A thread's own TTL (minutes; null: none) and strategy, counted from now.
UPDATE outlast_threads
SET ttl_minutes = %(ttl)s::float8, ttl_strategy = %(strategy)s, updated_at = clock_timestamp()
WHERE thread_id = %(thread_id)s
RETURNING *;

-- name: lg_threads_expired
-- Threads past their TTL: nothing updated on them (the thread, or a run of it) for
-- ttl_minutes, and no run of theirs active (queued, running, cancelling, waiting); a
-- keep_latest thread only if it was updated (it, or a run of it) since it was last pruned.
SELECT t.thread_id, t.ttl_strategy FROM outlast_threads t
WHERE t.ttl_minutes IS NOT NULL
  AND t.updated_at < now() - make_interval(secs => t.ttl_minutes * 60)
  AND (t.ttl_strategy = 'delete' OR t.pruned_at IS NULL OR t.pruned_at < t.updated_at
       OR EXISTS (SELECT 1 FROM outlast_runs r
                  WHERE r.thread_id = t.thread_id AND r.updated_at > t.pruned_at))
  AND NOT EXISTS (
      SELECT 1 FROM outlast_runs r
      WHERE r.thread_id = t.thread_id
        AND (r.status IN ('queued', 'running', 'cancelling', 'waiting')
             OR r.updated_at >= now() - make_interval(secs => t.ttl_minutes * 60)))
ORDER BY t.updated_at
LIMIT 100
FOR UPDATE OF t SKIP LOCKED;

-- name: lg_thread_mark_pruned
-- keep_latest pruned the thread now (its TTL clock is left alone).
UPDATE outlast_threads SET pruned_at = clock_timestamp() WHERE thread_id = %(thread_id)s;

-- name: lg_thread_last_update
-- A thread's TTL and its last update (its own, or a run's): what its expiry counts from.
SELECT t.ttl_minutes, t.ttl_strategy,
       greatest(t.updated_at, (SELECT max(r.updated_at) FROM outlast_runs r
                               WHERE r.thread_id = t.thread_id)) AS last_update
FROM outlast_threads t WHERE t.thread_id = %(thread_id)s;

-- name: sweep_due
-- Take the next sweep named `sweep` if it is due: next_at moves `every` seconds ahead and
-- the row comes back; for every other process in that interval, nothing comes back.
INSERT INTO outlast_sweeps (name, next_at)
VALUES (%(sweep)s, now() + make_interval(secs => %(every)s::float8))
ON CONFLICT (name) DO UPDATE SET next_at = EXCLUDED.next_at
WHERE outlast_sweeps.next_at <= now()
RETURNING name;

-- name: lg_thread_lock_row
-- Lock a thread's row until the transaction ends (a run's acceptance upserts it, so none
-- is accepted on it meanwhile); nothing if the thread is unknown.
SELECT thread_id FROM outlast_threads WHERE thread_id = %(thread_id)s FOR UPDATE;
