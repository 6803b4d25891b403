-- Named queries for the Postgres store (psycopg named parameters).
-- Notifications ride in the same statement as the write, so they are sent at commit and
-- only for writes that happened. Channels: outlast_queue (a run became claimable),
-- outlast_events ('<run_id>:<seq>'), outlast_control ('<run_id>', e.g. cancel requested),
-- outlast_status ('<run_id>': the run's status changed; waiters on results listen here,
-- so they are not woken by every event).

-- name: insert_run
WITH ins AS (
    INSERT INTO outlast_runs (id, principal, thread_id, graph, status, input, config, metadata,
                              budget, idempotency_key, fingerprint, max_attempts, last_seq,
                              options)
    VALUES (%(id)s, %(principal)s, %(thread_id)s, %(graph)s, 'queued', %(input)s::jsonb,
            %(config)s::jsonb, %(metadata)s::jsonb, %(budget)s::jsonb, %(idempotency_key)s,
            %(fingerprint)s, %(max_attempts)s, 1, %(options)s::jsonb)
    ON CONFLICT (principal, idempotency_key) DO NOTHING
    RETURNING *
), ev AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, 1, 'run.created', %(event)s::jsonb FROM ins
), th AS (
    -- the thread exists from its first run on (LangGraph's clients list threads); DO
    -- UPDATE, not DO NOTHING: the row stays locked until the commit, which serializes
    -- the acceptances of one thread (claim_one relies on it)
    INSERT INTO outlast_threads (thread_id, principal)
    SELECT thread_id, principal FROM ins
    ON CONFLICT (thread_id) DO UPDATE SET updated_at = clock_timestamp()
)
-- quiet: the accepting worker claims it in this transaction (claim_one), which announces
-- it to the queue only if it stays queued.
SELECT ins.*,
       CASE WHEN NOT %(quiet)s THEN pg_notify('outlast_queue', ins.id::text) END AS notified
FROM ins;

-- name: get_by_key
SELECT * FROM outlast_runs WHERE principal = %(principal)s AND idempotency_key = %(key)s;

-- name: get_run
SELECT * FROM outlast_runs WHERE id = %(id)s;

-- name: list_runs
SELECT * FROM outlast_runs
WHERE principal = %(principal)s
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(before)s::bigint IS NULL OR pos < %(before)s)
ORDER BY pos DESC
LIMIT %(limit)s;

-- name: read_events
SELECT run_id, seq, type, data, created_at FROM outlast_events
WHERE run_id = %(run_id)s AND seq > %(after)s
ORDER BY seq
LIMIT %(limit)s;

-- name: first_retained_seq
SELECT min(seq) AS seq FROM outlast_events WHERE run_id = %(run_id)s;

-- name: prune_events
DELETE FROM outlast_events WHERE run_id = %(run_id)s AND seq <= %(upto)s RETURNING seq;

-- name: count_runs_by_status
-- /metrics, at scrape time: one pass over the runs.
SELECT status, count(*) AS n FROM outlast_runs GROUP BY status;

-- name: claim
-- One active run per thread: a thread is one checkpoint lineage, so a run waits until
-- the thread's earlier runs (queued before it, running, cancelling or waiting) are done.
WITH picked AS (
    SELECT q.id FROM outlast_runs q
    WHERE (q.status = 'queued' OR (q.status = 'cancelling' AND q.worker_id IS NULL))
      AND NOT EXISTS (
          SELECT 1 FROM outlast_runs o
          WHERE o.thread_id = q.thread_id AND o.id <> q.id
            AND (o.status IN ('running', 'cancelling', 'waiting')
                 OR (o.status = 'queued' AND o.pos < q.pos)))
    ORDER BY q.pos
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), upd AS (
    -- A cancelling run without a worker (cancelled while queued or waiting, owing
    -- compensations) is claimed to compensate, and stays cancelling.
    UPDATE outlast_runs r
    SET status = CASE WHEN r.status = 'cancelling' THEN 'cancelling' ELSE 'running' END,
        worker_id = %(worker_id)s, lease_epoch = r.lease_epoch + 1,
        lease_expires_at = now() + make_interval(secs => %(ttl)s),
        attempts = r.attempts + 1, last_seq = r.last_seq + 1, updated_at = clock_timestamp()
    FROM picked WHERE r.id = picked.id
    RETURNING r.*
), ev AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq, 'run.started',
           jsonb_build_object('status', status, 'attempt', attempts, 'worker_id', worker_id)
    FROM upd
)
SELECT upd.*, pg_notify('outlast_events', upd.id::text || ':' || upd.last_seq) AS notified
FROM upd ORDER BY pos;

-- name: claim_one
-- Eager start: the run this transaction just inserted, claimed for the worker of the
-- process that accepted it when it may start at once. Stricter than `claim`: any other
-- active run of the thread, queued ones of any age included, keeps it queued. The
-- insert before it in this transaction locked the thread's row (insert_run), so the
-- acceptances of one thread commit one after the other, and this statement's snapshot,
-- taken after that lock, sees every run of the thread accepted before it.
WITH picked AS (
    SELECT q.id FROM outlast_runs q
    WHERE q.id = %(id)s AND q.status = 'queued'
      AND NOT EXISTS (
          SELECT 1 FROM outlast_runs o
          WHERE o.thread_id = q.thread_id AND o.id <> q.id
            AND o.status IN ('queued', 'running', 'cancelling', 'waiting'))
), upd AS (
    UPDATE outlast_runs r
    SET status = 'running', worker_id = %(worker_id)s, lease_epoch = r.lease_epoch + 1,
        lease_expires_at = now() + make_interval(secs => %(ttl)s),
        attempts = r.attempts + 1, last_seq = r.last_seq + 1, updated_at = clock_timestamp()
    FROM picked WHERE r.id = picked.id
    RETURNING r.*
), ev AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq, 'run.started',
           jsonb_build_object('status', 'running', 'attempt', attempts, 'worker_id', worker_id)
    FROM upd
)
SELECT upd.* FROM upd;

-- name: announce_queued
-- After claim_one, in the same transaction: a run it left queued is the queue's.
SELECT pg_notify('outlast_queue', id::text) AS notified
FROM outlast_runs WHERE id = %(id)s AND status = 'queued';

-- name: renew
UPDATE outlast_runs
SET lease_expires_at = now() + make_interval(secs => %(ttl)s)
WHERE worker_id = %(worker_id)s AND status IN ('running', 'cancelling')
  AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[]))
RETURNING id, lease_epoch, status;

-- name: append
WITH r AS (
    UPDATE outlast_runs SET last_seq = last_seq + %(n)s, updated_at = clock_timestamp()
    WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
      AND status IN ('running', 'cancelling')
    RETURNING last_seq
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT %(run_id)s::uuid, r.last_seq - %(n)s + e.ord, e.type, e.data::jsonb
    FROM r, unnest(%(types)s::text[], %(datas)s::text[]) WITH ORDINALITY AS e (type, data, ord)
    RETURNING seq
)
SELECT max(seq) AS seq,
       pg_notify('outlast_events', %(run_id)s::text || ':' || max(seq)) AS notified
FROM ins HAVING count(*) > 0;

-- name: carried_append
-- The append a checkpoint write carries, as the first statement of its pipeline: it is
-- the write's fence too. When the lease is not held the UPDATE matches nothing and
-- outlast_fence() raises (OL001, as it would have as a statement of its own), so the
-- whole pipeline rolls back; one statement and one row lock fewer per step.
WITH r AS (
    UPDATE outlast_runs SET last_seq = last_seq + %(n)s, updated_at = clock_timestamp()
    WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
      AND status IN ('running', 'cancelling')
    RETURNING last_seq
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT %(run_id)s::uuid, r.last_seq - %(n)s + e.ord, e.type, e.data::jsonb
    FROM r, unnest(%(types)s::text[], %(datas)s::text[]) WITH ORDINALITY AS e (type, data, ord)
    RETURNING seq
)
SELECT (SELECT last_seq FROM r) AS seq,
       CASE WHEN EXISTS (SELECT 1 FROM r)
            THEN pg_notify('outlast_events', %(run_id)s::text || ':' || (SELECT last_seq FROM r))
            ELSE outlast_fence(%(run_id)s::uuid, %(worker_id)s, %(epoch)s) END AS fenced
FROM (SELECT count(*) FROM ins) AS written;

-- name: finish
WITH r AS (
    UPDATE outlast_runs
    SET status = %(status)s, result = %(result)s::jsonb, error = %(error)s::jsonb,
        worker_id = NULL, lease_expires_at = NULL, activity = NULL, last_seq = last_seq + 1,
        updated_at = clock_timestamp()
    WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
      AND status IN ('running', 'cancelling')
    RETURNING id, last_seq, thread_id
), settled AS (
    UPDATE outlast_waits
    SET status = CASE WHEN status = 'answered' THEN 'resumed' ELSE 'withdrawn' END
    WHERE run_id = (SELECT id FROM r) AND status IN ('open', 'answered')
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq, %(type)s, %(data)s::jsonb FROM r
    RETURNING run_id, seq
)
-- The queue hears of it only when the thread has a run queued behind this one: nothing
-- else becomes claimable (a worker's own freed slot needs no notification), and every
-- worker woken for nothing would run a claim statement, one more per run.
SELECT seq, pg_notify('outlast_events', run_id::text || ':' || seq) AS n1,
       CASE WHEN EXISTS (SELECT 1 FROM outlast_runs o
                         WHERE o.thread_id = r.thread_id AND o.status = 'queued')
            THEN pg_notify('outlast_queue', run_id::text) END AS n2,
       pg_notify('outlast_status', run_id::text) AS n3
FROM ins, r;

-- name: release
-- A cancelling run released (its worker drained before it heard of the cancel) that owes
-- compensations stays cancelling, with no worker and its ending recorded (x: the row as
-- it is once locked, so a cancel that commits meanwhile is seen).
WITH r AS (
    UPDATE outlast_runs o
    SET status = CASE WHEN o.status <> 'cancelling' THEN 'queued'
                      WHEN x.ending IS NOT NULL THEN 'cancelling'
                      ELSE 'cancelled' END,
        ending = x.ending,
        attempts = CASE WHEN o.status = 'cancelling' AND x.ending IS NULL THEN o.attempts
                        ELSE o.attempts - 1 END,
        error = CASE WHEN o.status = 'cancelling' AND x.ending IS NULL
                     THEN jsonb_build_object('type', 'cancelled', 'reason', 'cancelled while draining')
                     ELSE o.error END,
        worker_id = NULL, lease_expires_at = NULL, activity = NULL,
        lease_epoch = o.lease_epoch + 1, last_seq = o.last_seq + 1,
        updated_at = clock_timestamp()
    FROM (SELECT c.id,
                 CASE WHEN c.ending IS NOT NULL THEN c.ending
                      WHEN c.status = 'cancelling'
                       AND COALESCE((c.error->>'compensate')::boolean, true)
                       AND EXISTS (SELECT 1 FROM outlast_effects e
                                   WHERE e.run_id = c.id AND e.compensate IS NOT NULL
                                     AND e.status <> 'failed')
                      THEN jsonb_build_object('status', 'cancelled', 'error', jsonb_build_object(
                               'type', COALESCE(c.error->>'type', 'cancelled'),
                               'reason', COALESCE(c.error->>'reason', 'cancelled')))
                 END AS ending
          FROM outlast_runs c WHERE c.id = %(run_id)s FOR UPDATE) AS x
    WHERE o.id = x.id AND o.worker_id = %(worker_id)s AND o.lease_epoch = %(epoch)s
      AND o.status IN ('running', 'cancelling')
    RETURNING o.id, o.last_seq, o.status
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq,
           CASE WHEN status = 'cancelled' THEN 'run.cancelled' ELSE 'run.released' END,
           jsonb_build_object('status', status, 'reason', %(reason)s::text)
    FROM r
    RETURNING run_id, seq
)
SELECT seq, pg_notify('outlast_events', run_id::text || ':' || seq) AS n1,
       pg_notify('outlast_queue', run_id::text) AS n2,
       pg_notify('outlast_status', run_id::text) AS n3
FROM ins;

-- name: cancel
-- A queued or waiting run that owes compensations (a done effect declared with
-- `compensate=`; or queued with its ending already decided) becomes cancelling with no
-- worker (x.ending: the ending it goes on to): the claim hands it to one, which
-- compensates and then ends it. Waiting on a compensation a person must settle, a cancel
-- gives the rest up.
WITH r AS (
    UPDATE outlast_runs o
    SET status = CASE WHEN o.status = 'running' OR x.ending IS NOT NULL THEN 'cancelling'
                      ELSE 'cancelled' END,
        ending = COALESCE(x.ending, o.ending),
        error = jsonb_build_object('type', 'cancelled', 'reason', %(reason)s::text),
        worker_id = CASE WHEN o.status = 'running' THEN o.worker_id END,
        lease_expires_at = CASE WHEN o.status = 'running' THEN o.lease_expires_at END,
        last_seq = o.last_seq + 1, updated_at = clock_timestamp()
    FROM (SELECT c.id,
                 CASE WHEN c.status = 'running' THEN NULL
                      WHEN c.ending IS NOT NULL AND c.status = 'queued' THEN c.ending
                      WHEN c.ending IS NULL
                       AND EXISTS (SELECT 1 FROM outlast_effects e
                                   WHERE e.run_id = c.id AND e.compensate IS NOT NULL
                                     AND e.status <> 'failed')
                      THEN jsonb_build_object('status', 'cancelled', 'error', jsonb_build_object(
                               'type', 'cancelled', 'reason', %(reason)s::text))
                 END AS ending
          FROM outlast_runs c WHERE c.id = %(run_id)s FOR UPDATE) AS x
    WHERE o.id = x.id AND o.status IN ('queued', 'waiting', 'running')
    RETURNING o.*
), withdrawn AS (
    UPDATE outlast_waits SET status = 'withdrawn'
    WHERE run_id IN (SELECT id FROM r WHERE status = 'cancelled' OR worker_id IS NULL)
      AND status IN ('open', 'answered')
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq,
           CASE WHEN status = 'cancelled' THEN 'run.cancelled' ELSE 'run.cancelling' END,
           jsonb_build_object('status', status, 'reason', %(reason)s::text)
    FROM r
)
SELECT r.*, pg_notify('outlast_events', r.id::text || ':' || r.last_seq) AS n1,
       pg_notify('outlast_control', r.id::text) AS n2,
       pg_notify('outlast_queue', r.id::text) AS n3,
       pg_notify('outlast_status', r.id::text) AS n4
FROM r;

-- name: reap
-- A run that owes compensations goes back to a worker whatever its attempts, with its
-- ending recorded here if the lost worker had not recorded it (cancelling: it stays
-- cancelling, with no worker; lost on its last attempt: it will end failed).
WITH expired AS (
    SELECT x.id,
           CASE WHEN x.ending IS NOT NULL THEN x.ending
                WHEN NOT EXISTS (SELECT 1 FROM outlast_effects e
                                 WHERE e.run_id = x.id AND e.compensate IS NOT NULL
                                   AND e.status <> 'failed') THEN NULL
                WHEN x.status = 'cancelling' AND COALESCE((x.error->>'compensate')::boolean, true)
                THEN jsonb_build_object('status', 'cancelled', 'error', jsonb_build_object(
                         'type', COALESCE(x.error->>'type', 'cancelled'),
                         'reason', COALESCE(x.error->>'reason', 'cancelled')))
                WHEN x.status = 'running' AND x.attempts >= x.max_attempts
                THEN jsonb_build_object('status', 'failed', 'error', jsonb_build_object(
                         'type', 'worker_lost',
                         'reason', 'worker lease expired on the last attempt',
                         'attempts', x.attempts))
           END AS ending
    FROM outlast_runs x
    WHERE x.status IN ('running', 'cancelling') AND x.lease_expires_at < now()
    ORDER BY x.lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE OF x SKIP LOCKED
), r AS (
    UPDATE outlast_runs o
    SET status = CASE WHEN expired.ending IS NULL AND o.status = 'cancelling' THEN 'cancelled'
                      WHEN expired.ending IS NULL AND o.attempts >= o.max_attempts THEN 'failed'
                      WHEN o.status = 'cancelling' THEN 'cancelling'
                      ELSE 'queued' END,
        ending = expired.ending,
        error = CASE WHEN expired.ending IS NOT NULL THEN o.error
                     WHEN o.status = 'cancelling'
                     THEN jsonb_build_object('type', 'cancelled',
                                             'reason', 'worker lost while cancelling')
                     WHEN o.attempts >= o.max_attempts
                     THEN jsonb_build_object('type', 'worker_lost',
                                             'reason', 'worker lease expired on the last attempt',
                                             'attempts', o.attempts)
                     ELSE o.error END,
        worker_id = NULL, lease_expires_at = NULL, activity = NULL, lease_epoch = o.lease_epoch + 1,
        last_seq = o.last_seq + 1, updated_at = clock_timestamp()
    FROM expired WHERE o.id = expired.id
    RETURNING o.id, o.status, o.last_seq, o.attempts
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq,
           CASE status WHEN 'queued' THEN 'run.requeued' WHEN 'cancelling' THEN 'run.requeued'
                       WHEN 'failed' THEN 'run.failed' ELSE 'run.cancelled' END,
           jsonb_build_object('status', status, 'reason', 'worker lease expired',
                              'attempts', attempts)
    FROM r
)
SELECT r.id, r.status, r.last_seq,
       pg_notify('outlast_events', r.id::text || ':' || r.last_seq) AS n1,
       pg_notify('outlast_queue', r.id::text) AS n2,
       pg_notify('outlast_status', r.id::text) AS n3
FROM r;

-- ---------------------------------------------------------------------------------------
-- Waits, signals, threads, retention. Sent by store/common.py (SharedRunOps) through a Tx; every
-- JSON parameter arrives as text.

-- name: insert_event
INSERT INTO outlast_events (run_id, seq, type, data)
VALUES (%(run_id)s, %(seq)s, %(type)s, %(data)s::jsonb);

-- name: bump_any
UPDATE outlast_runs SET last_seq = last_seq + %(n)s, updated_at = clock_timestamp()
WHERE id = %(run_id)s
RETURNING last_seq;

-- name: notify
SELECT pg_notify(%(channel)s, %(payload)s);

-- name: w_insert
INSERT INTO outlast_waits (id, run_id, interrupt_id, kind, status, object, prompt, schema,
                           event_keys, has_default, default_answer, probe, wake_at,
                           lease_expires_at)
VALUES (%(id)s, %(run_id)s, %(interrupt_id)s, %(kind)s, 'open', %(object)s::jsonb,
        %(prompt)s::jsonb, %(schema)s::jsonb, %(event_keys)s::jsonb, %(has_default)s,
        %(default_answer)s::jsonb, %(probe)s::jsonb,
        COALESCE(%(wake_at)s::timestamptz, now() + make_interval(secs => %(wake_in)s::float8)),
        COALESCE(%(wake_at)s::timestamptz, now() + make_interval(secs => %(wake_in)s::float8))
            + make_interval(secs => %(lease_grace)s::float8))
RETURNING *;

-- name: w_find_live
SELECT * FROM outlast_waits
WHERE run_id = %(run_id)s AND interrupt_id = %(interrupt_id)s AND status IN ('open', 'answered');

-- name: w_resume_consumed
UPDATE outlast_waits SET status = 'resumed'
WHERE run_id = %(run_id)s AND status = 'answered'
  AND interrupt_id NOT IN (SELECT jsonb_array_elements_text(%(pending)s::jsonb));

-- name: w_count_answered
SELECT count(*) AS n FROM outlast_waits WHERE run_id = %(run_id)s AND status = 'answered';

-- name: w_park_run
UPDATE outlast_runs
-- Parking is not a failed attempt: like a release, it gives the attempt back.
SET attempts = attempts - 1,
    -- (a cancelling run with its ending decided parks on a compensation's reconciliation)
    status = CASE WHEN status = 'cancelling' AND ending IS NULL THEN 'cancelled'
                  ELSE %(status)s END,
    worker_id = NULL, lease_expires_at = NULL, activity = NULL, lease_epoch = lease_epoch + 1,
    updated_at = clock_timestamp()
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING status;

-- name: w_get
SELECT * FROM outlast_waits WHERE id = %(id)s FOR UPDATE;

-- name: w_answer
UPDATE outlast_waits
SET status = 'answered', answer_key = %(key)s, answer = %(answer)s::jsonb, answered_how = %(how)s,
    answered_at = clock_timestamp(), last_signal_at = clock_timestamp()
WHERE id = %(id)s AND status = 'open'
RETURNING *;

-- name: w_read
-- w_get without the row lock, for reads.
SELECT * FROM outlast_waits WHERE id = %(id)s;

-- name: w_open_of_runs
-- The open waits of a page of runs (a JSON array of run ids), in one query.
SELECT * FROM outlast_waits
WHERE run_id IN (SELECT value::uuid FROM jsonb_array_elements_text(%(run_ids)s::jsonb)) AND status = 'open'
ORDER BY run_id, since, id;

-- name: w_list
SELECT * FROM outlast_waits
WHERE run_id = %(run_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY since, id;

-- name: w_settle
UPDATE outlast_waits
SET status = CASE WHEN status = 'answered' THEN 'resumed' ELSE 'withdrawn' END
WHERE run_id = %(run_id)s AND status IN ('open', 'answered')
RETURNING id;

-- name: run_requeue_if_waiting
UPDATE outlast_runs SET status = 'queued', updated_at = clock_timestamp()
WHERE id = %(run_id)s AND status = 'waiting'
RETURNING id;

-- name: sig_insert
INSERT INTO outlast_signals (key, payload, principal)
VALUES (%(key)s, %(payload)s::jsonb, %(principal)s) RETURNING id;

-- name: sig_match
SELECT w.* FROM outlast_waits w JOIN outlast_runs r ON r.id = w.run_id
WHERE w.status = 'open' AND w.kind = 'event' AND w.event_keys ? %(key)s
  AND r.principal = %(principal)s
ORDER BY w.since
FOR UPDATE OF w SKIP LOCKED;

-- name: sig_lookback
SELECT key, payload FROM outlast_signals
WHERE key IN (SELECT jsonb_array_elements_text(%(keys)s::jsonb))
  AND principal = (SELECT principal FROM outlast_runs WHERE id = %(run_id)s)
  AND created_at >= now() - make_interval(secs => %(lookback)s::float8)
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: w_due
WITH due AS (
    SELECT id FROM outlast_waits
    WHERE status = 'open' AND wake_at <= now()
    ORDER BY wake_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE outlast_waits w SET wake_at = now() + make_interval(secs => %(hold)s::float8)
FROM due WHERE w.id = due.id
RETURNING w.*;

-- name: w_next_due
SELECT extract(epoch FROM (min(wake_at) - now())) AS seconds
FROM outlast_waits WHERE status = 'open' AND wake_at IS NOT NULL;

-- name: w_probe_ok
UPDATE outlast_waits
SET renewals = renewals + 1, failures = 0, last_signal_at = clock_timestamp(),
    wake_at = now() + make_interval(secs => %(every)s::float8),
    lease_expires_at = now() + make_interval(secs => 2 * %(every)s::float8)
WHERE id = %(id)s AND status = 'open'
RETURNING *;

-- name: w_probe_failed
UPDATE outlast_waits
SET failures = failures + 1, wake_at = now() + make_interval(secs => %(every)s::float8)
WHERE id = %(id)s AND status = 'open'
RETURNING *;

-- name: thread_lock
SELECT pg_advisory_xact_lock(hashtext(%(thread_id)s));

-- name: thread_active
SELECT * FROM outlast_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos LIMIT 1;

-- name: thread_latest
SELECT * FROM outlast_runs WHERE thread_id = %(thread_id)s ORDER BY pos DESC LIMIT 1;

-- name: prune_by_count
DELETE FROM outlast_events e USING outlast_runs r
WHERE e.run_id = r.id AND e.seq <= r.last_seq - %(keep)s;

-- name: prune_by_age
DELETE FROM outlast_events WHERE created_at < now() - make_interval(secs => %(age)s::float8);

-- name: w_withdraw
UPDATE outlast_waits SET status = 'withdrawn'
WHERE run_id = %(run_id)s AND status IN ('open', 'answered');

-- name: set_activity
UPDATE outlast_runs
SET activity = %(activity)s::jsonb, usage = COALESCE(%(usage)s::jsonb, usage)
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_supervision
UPDATE outlast_runs SET supervision = %(supervision)s::jsonb
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_ending
UPDATE outlast_runs SET ending = %(ending)s::jsonb, updated_at = clock_timestamp()
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_budget
UPDATE outlast_runs SET budget = %(budget)s::jsonb
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: w_consume
UPDATE outlast_waits SET status = 'resumed' WHERE id = %(id)s AND status = 'answered'
RETURNING id;

-- name: e_begin
INSERT INTO outlast_effects (run_id, key, tool, args_hash, args, idempotent, status,
                             compensate, compensates)
VALUES (%(run_id)s, %(key)s, %(tool)s, %(args_hash)s, %(args)s::jsonb, %(idempotent)s, 'started',
        %(compensate)s, %(compensates)s)
ON CONFLICT (run_id, key) DO NOTHING
RETURNING *;

-- name: e_get
SELECT * FROM outlast_effects WHERE run_id = %(run_id)s AND key = %(key)s FOR UPDATE;

-- name: e_retry
UPDATE outlast_effects SET status = 'started', calls = calls + 1, error = NULL
WHERE run_id = %(run_id)s AND key = %(key)s
RETURNING *;

-- name: e_finish
UPDATE outlast_effects
SET status = %(status)s, result = %(result)s::jsonb, error = %(error)s,
    finished_at = clock_timestamp()
WHERE run_id = %(run_id)s AND key = %(key)s
RETURNING *;

-- name: e_list
SELECT * FROM outlast_effects WHERE run_id = %(run_id)s ORDER BY started_at, key;

-- name: count_active
SELECT count(*) AS n FROM outlast_runs
WHERE principal = %(principal)s AND status IN ('queued', 'running', 'cancelling');
