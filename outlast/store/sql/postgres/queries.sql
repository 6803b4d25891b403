-- Named queries for the Postgres store (psycopg named parameters).
-- The hot path's notifications (accept, claim, append, finish) ride in the same statement
-- as the write; the cold-path transitions (store/transition_ops.py) send theirs with
-- `notify` in their transaction. Either way they are sent at commit and only for writes
-- that happened. Channels: outlast_queue (a run became claimable),
-- outlast_events ('<run_id>:<seq>'), outlast_control ('<run_id>', e.g. cancel requested),
-- outlast_status ('<run_id>': the run's status changed; waiters on results listen here,
-- so they are not woken by every event), outlast_threads ('<thread_id>': a run was accepted
-- on it; the thread's idle streams look again).

-- name: insert_run
-- Accept a run: its row and its first event (run.created), or nothing if its key exists.
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
    -- the acceptances of one thread (an eager claim relies on it)
    -- a thread made by its first run gets the metadata the app's auth.py stamped
    -- (thread_metadata) and the deployment's default TTL (thread_ttl)
    -- the thread must be the one `thread_owner` owns (the caller's own, or one the app's
    -- auth.py shares with it): a row of another owner is not updated, th returns nothing
    -- for it, and the SELECT below fails the whole statement (OL002, no run written).
    -- A row made between this statement's snapshot and its upsert is caught the same way.
    INSERT INTO outlast_threads (thread_id, principal, metadata, ttl_minutes, ttl_strategy)
    SELECT thread_id, principal, %(thread_metadata)s::jsonb, %(thread_ttl)s::float8,
           %(thread_ttl_strategy)s
    FROM ins
    ON CONFLICT (thread_id) DO UPDATE SET updated_at = clock_timestamp()
        WHERE outlast_threads.principal = %(thread_owner)s
    RETURNING thread_id
)
-- quiet: the accepting worker claims it in this transaction (claim with `id`), which announces
-- it to the queue only if it stays queued.
SELECT ins.*,
       CASE WHEN NOT %(quiet)s THEN pg_notify('outlast_queue', ins.id::text) END AS notified,
       CASE WHEN ins.thread_id IS NOT NULL
            THEN pg_notify('outlast_threads', ins.thread_id) END AS thread_noted,
       CASE WHEN ins.thread_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM th)
            THEN outlast_thread_refused(ins.thread_id) END AS thread_refused
FROM ins;

-- name: get_by_key
-- The run a principal accepted under an idempotency key.
SELECT * FROM outlast_runs WHERE principal = %(principal)s AND idempotency_key = %(key)s;

-- name: get_run
-- One run by id.
SELECT * FROM outlast_runs WHERE id = %(id)s;

-- name: list_runs
-- A page of a principal's runs (any principal's: NULL), newest first, by thread and status if given.
SELECT * FROM outlast_runs
WHERE (%(principal)s::text IS NULL OR principal = %(principal)s)
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(before)s::bigint IS NULL OR pos < %(before)s)
ORDER BY pos DESC
LIMIT %(limit)s;

-- name: read_events
-- A run's events after a seq, in order, at most `limit`.
SELECT run_id, seq, type, data, created_at FROM outlast_events
WHERE run_id = %(run_id)s AND seq > %(after)s
ORDER BY seq
LIMIT %(limit)s;

-- name: first_retained_seq
-- The lowest seq retention kept of a run's log.
SELECT min(seq) AS seq FROM outlast_events WHERE run_id = %(run_id)s;

-- name: prune_events
-- Drop a run's events up to a seq (its last_seq stays).
DELETE FROM outlast_events WHERE run_id = %(run_id)s AND seq <= %(upto)s RETURNING seq;

-- name: count_runs_by_status
-- How many runs have each status.
-- /metrics, at scrape time: one pass over the runs.
SELECT status, count(*) AS n FROM outlast_runs GROUP BY status;

-- name: claim
-- Claim runs for a worker: up to `limit`, oldest first, or only run `id` (eager start).
-- One active run per thread: a thread is one checkpoint lineage, so a run waits until
-- the thread's earlier runs (queued before it, running, cancelling or waiting) are done.
-- A cancelling run without a worker (cancelled while queued or waiting, owing work at its
-- end) is claimed to do that work, and stays cancelling.
-- Eager start (`id`: the run this transaction just inserted, claimed for the worker of
-- the process that accepted it when it may start at once) is stricter: any other active
-- run of the thread, queued ones of any age included, keeps it queued. The insert before
-- it in this transaction locked the thread's row (insert_run), so the acceptances of one
-- thread commit one after the other, and this statement's snapshot, taken after that
-- lock, sees every run of the thread accepted before it. Nobody is notified of an eager
-- claim: nobody follows a run that is being accepted.
WITH picked AS (
    SELECT q.id FROM outlast_runs q
    WHERE (q.status = 'queued' OR (q.status = 'cancelling' AND q.worker_id IS NULL))
      AND (%(id)s::uuid IS NULL OR q.id = %(id)s::uuid)
      AND NOT EXISTS (
          SELECT 1 FROM outlast_runs o
          WHERE o.thread_id = q.thread_id AND o.id <> q.id
            AND (o.status IN ('running', 'cancelling', 'waiting')
                 OR (o.status = 'queued' AND (o.pos < q.pos OR %(id)s::uuid IS NOT NULL))))
    ORDER BY q.pos
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), upd AS (
    UPDATE outlast_runs r
    SET status = CASE WHEN r.status = 'cancelling' THEN 'cancelling' ELSE 'running' END,
        worker_id = %(worker_id)s, lease_epoch = r.lease_epoch + 1,
        lease_expires_at = now() + make_interval(secs => %(ttl)s),
        attempts = r.attempts + 1, last_seq = r.last_seq + 1, claim_seq = r.last_seq + 1,
        updated_at = clock_timestamp()
    FROM picked WHERE r.id = picked.id
    RETURNING r.*
), ev AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT id, last_seq, 'run.started',
           jsonb_build_object('status', status, 'attempt', attempts, 'worker_id', worker_id,
                              'epoch', lease_epoch)
    FROM upd
)
SELECT upd.*,
       CASE WHEN %(id)s::uuid IS NULL
            THEN pg_notify('outlast_events', upd.id::text || ':' || upd.last_seq) END AS notified
FROM upd ORDER BY pos;

-- name: announce_queued
-- After an eager claim, in the same transaction: a run it left queued is the queue's.
SELECT pg_notify('outlast_queue', id::text) AS notified
FROM outlast_runs WHERE id = %(id)s AND status = 'queued';

-- name: renew
-- Extend a worker's leases (on some of its runs, or all), each run's epoch and status back.
UPDATE outlast_runs
SET lease_expires_at = now() + make_interval(secs => %(ttl)s)
WHERE worker_id = %(worker_id)s AND status IN ('running', 'cancelling')
  AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s::uuid[]))
RETURNING id, lease_epoch, status;

-- name: append
-- Append a batch of a run's events, fenced by the lease, and notify the log's followers.
-- The batch's token makes a retry harmless: when the connection broke after the commit,
-- the batch sent again finds its token on the run and nothing is appended twice (the
-- second SELECT, on the statement's snapshot, answers the run's last seq then). A NULL
-- token asks for no such check.
WITH r AS (
    UPDATE outlast_runs
    SET last_seq = last_seq + %(n)s, append_token = %(token)s::uuid,
        updated_at = clock_timestamp()
    WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
      AND status IN ('running', 'cancelling')
      AND (%(token)s::uuid IS NULL OR append_token IS DISTINCT FROM %(token)s::uuid)
    RETURNING last_seq
), ins AS (
    INSERT INTO outlast_events (run_id, seq, type, data)
    SELECT %(run_id)s::uuid, r.last_seq - %(n)s + e.ord, e.type, e.data::jsonb
    FROM r, unnest(%(types)s::text[], %(datas)s::text[]) WITH ORDINALITY AS e (type, data, ord)
    RETURNING seq
)
SELECT max(seq) AS seq,
       pg_notify('outlast_events', %(run_id)s::text || ':' || max(seq)) AS notified
FROM ins HAVING count(*) > 0
UNION ALL
SELECT last_seq AS seq, NULL AS notified FROM outlast_runs
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling') AND append_token = %(token)s::uuid;

-- name: carried_append
-- The append a checkpoint write carries, as the first statement of its pipeline: it is
-- the write's fence too. When the lease is not held the UPDATE matches nothing and
-- outlast_fence() raises (OL001, as it would have as a statement of its own), so the
-- whole pipeline rolls back; one statement and one row lock fewer per step. It records
-- the batch's token as ``append`` does: if the answer is lost, the sink sends the same
-- batch again with ``append``, which finds the token.
WITH r AS (
    UPDATE outlast_runs
    SET last_seq = last_seq + %(n)s, append_token = %(token)s::uuid,
        updated_at = clock_timestamp()
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
-- End a run in a terminal status with its event, fenced by the lease; drops the lease.
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

-- ---------------------------------------------------------------------------------------
-- The cold-path transitions: store/transition_ops.py locks the row with one of these, asks
-- store/transitions.py what changes, and writes it with run_apply.

-- name: run_lock
-- The run's row, locked until the transaction ends: what a cold-path transition decides on.
SELECT * FROM outlast_runs WHERE id = %(id)s FOR UPDATE;

-- name: run_lock_leased
-- The run's row locked, if `worker_id` still holds it at `epoch` (no row: the lease is lost).
SELECT * FROM outlast_runs
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
FOR UPDATE;

-- name: run_lock_expired
-- Up to `limit` runs whose worker lease expired on database time, oldest first, locked.
-- SKIP LOCKED passes over a run while its holder writes a checkpoint (the fence holds
-- the row FOR KEY SHARE): a worker in the middle of a write is not presumed dead.
-- Nor is one within `grace` seconds of the server's start: a lease that ran out while
-- the server was down ran out with nobody able to renew it (store/outage.py).
-- Nor a run the reaping worker (`holder`) holds and executes (`held`, a JSON array of
-- ids): it is alive, only late, and renews the lease at its next heartbeat.
SELECT * FROM outlast_runs
WHERE status IN ('running', 'cancelling') AND lease_expires_at < now()
  AND now() > pg_postmaster_start_time() + make_interval(secs => %(grace)s)
  AND (worker_id IS DISTINCT FROM %(holder)s::text
       OR id::text NOT IN (SELECT jsonb_array_elements_text(%(held)s::jsonb)))
ORDER BY lease_expires_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: run_progress
-- Whether the attempt of a run (locked by the caller) saved a step since its claim: a
-- node.updated of the root graph (a step its checkpoints keep) after its run.started,
-- not one a resume recovered for an earlier attempt.
SELECT EXISTS (
    SELECT 1 FROM outlast_runs r JOIN outlast_events e ON e.run_id = r.id
    WHERE r.id = %(run_id)s AND e.seq > r.claim_seq AND e.type = 'node.updated'
      AND e.data ->> 'ns' = '' AND e.data -> 'recovered' IS NULL
) AS progressed;

-- name: run_apply
-- A cold-path transition as store/transitions.py decided it, on a row the caller locked;
-- last_seq moves on by one, for the transition's event.
UPDATE outlast_runs
SET status = %(status)s, ending = %(ending)s::jsonb, error = %(error)s::jsonb,
    attempts = attempts + %(attempts)s,
    worker_id = CASE WHEN %(keep_worker)s THEN worker_id END,
    lease_expires_at = CASE WHEN %(keep_worker)s THEN lease_expires_at END,
    activity = CASE WHEN %(keep_worker)s THEN activity END,
    lease_epoch = lease_epoch + %(epoch)s,
    last_seq = last_seq + 1, updated_at = clock_timestamp()
WHERE id = %(run_id)s
RETURNING *;

-- name: run_set_ending
-- Record how a run owing work ends (set_ending), on a row the caller locked under its lease.
UPDATE outlast_runs SET ending = %(ending)s::jsonb, updated_at = clock_timestamp()
WHERE id = %(run_id)s;

-- ---------------------------------------------------------------------------------------
-- Run reads, the event log, waits, signals, parking, threads, retention. Sent through a Tx by
-- the ops written once for both backends (store/run_ops.py, event_ops.py, wait_ops.py,
-- park_ops.py); every JSON parameter arrives as text.

-- name: insert_event
-- One event at a seq the caller took.
INSERT INTO outlast_events (run_id, seq, type, data)
VALUES (%(run_id)s, %(seq)s, %(type)s, %(data)s::jsonb);

-- name: bump_any
-- Take the next `n` seqs of a run, unfenced (the caller decided it may write).
UPDATE outlast_runs SET last_seq = last_seq + %(n)s, updated_at = clock_timestamp()
WHERE id = %(run_id)s
RETURNING last_seq;

-- name: notify
-- Send a notification, delivered at commit.
SELECT pg_notify(%(channel)s, %(payload)s);

-- name: w_insert
-- A new open wait of a run, with its wake time and lease.
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
-- A run's live (open or answered) wait for an interrupt id.
SELECT * FROM outlast_waits
WHERE run_id = %(run_id)s AND interrupt_id = %(interrupt_id)s AND status IN ('open', 'answered');

-- name: w_resume_consumed
-- Answered waits whose interrupt the graph no longer has pending become resumed.
UPDATE outlast_waits SET status = 'resumed'
WHERE run_id = %(run_id)s AND status = 'answered'
  AND interrupt_id NOT IN (SELECT jsonb_array_elements_text(%(pending)s::jsonb));

-- name: w_count_answered
-- How many of a run's waits are answered (not yet consumed).
SELECT count(*) AS n FROM outlast_waits WHERE run_id = %(run_id)s AND status = 'answered';

-- name: w_get
-- One wait by id, locked (Postgres) for an answer.
SELECT * FROM outlast_waits WHERE id = %(id)s FOR UPDATE;

-- name: w_answer
-- Answer an open wait; no row when it is not open any more.
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
-- A run's waits, of one status if given, oldest first.
SELECT * FROM outlast_waits
WHERE run_id = %(run_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY since, id;

-- name: w_settle
-- A run's waits at its end: answered become resumed, open ones withdrawn.
UPDATE outlast_waits
SET status = CASE WHEN status = 'answered' THEN 'resumed' ELSE 'withdrawn' END
WHERE run_id = %(run_id)s AND status IN ('open', 'answered')
RETURNING id;

-- name: run_requeue_if_waiting
-- Queue a waiting run again (one of its waits was answered).
UPDATE outlast_runs SET status = 'queued', updated_at = clock_timestamp()
WHERE id = %(run_id)s AND status = 'waiting'
RETURNING id;

-- name: sig_insert
-- Store a signal (for the lookback of waits parked later).
INSERT INTO outlast_signals (key, payload, principal)
VALUES (%(key)s, %(payload)s::jsonb, %(principal)s) RETURNING id;

-- name: sig_match
-- The open event waits of a principal's runs that a signal's key answers.
SELECT w.* FROM outlast_waits w JOIN outlast_runs r ON r.id = w.run_id
WHERE w.status = 'open' AND w.kind = 'event' AND w.event_keys ? %(key)s
  AND r.principal = %(principal)s
ORDER BY w.since
FOR UPDATE OF w SKIP LOCKED;

-- name: sig_lookback
-- The latest signal on one of a wait's keys within the lookback window.
SELECT key, payload FROM outlast_signals
WHERE key IN (SELECT jsonb_array_elements_text(%(keys)s::jsonb))
  AND principal = (SELECT principal FROM outlast_runs WHERE id = %(run_id)s)
  AND created_at >= now() - make_interval(secs => %(lookback)s::float8)
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: w_due
-- Claim waits whose wake time has come, holding them a while from other workers.
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
-- Seconds until the next open wait is due.
SELECT extract(epoch FROM (min(wake_at) - now())) AS seconds
FROM outlast_waits WHERE status = 'open' AND wake_at IS NOT NULL;

-- name: w_probe_ok
-- A wait's probe answered: renew its lease and schedule the next probe.
UPDATE outlast_waits
SET renewals = renewals + 1, failures = 0, last_signal_at = clock_timestamp(),
    wake_at = now() + make_interval(secs => %(every)s::float8),
    lease_expires_at = now() + make_interval(secs => 2 * %(every)s::float8)
WHERE id = %(id)s AND status = 'open'
RETURNING *;

-- name: w_probe_failed
-- A wait's probe failed: count it and schedule the next probe.
UPDATE outlast_waits
SET failures = failures + 1, wake_at = now() + make_interval(secs => %(every)s::float8)
WHERE id = %(id)s AND status = 'open'
RETURNING *;

-- name: thread_lock
-- Serialize the writes of one thread until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext(%(thread_id)s));

-- name: thread_active
-- The oldest active (queued, running, cancelling, waiting) run of a thread.
SELECT * FROM outlast_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos LIMIT 1;

-- name: thread_latest
-- The newest run of a thread.
SELECT * FROM outlast_runs WHERE thread_id = %(thread_id)s ORDER BY pos DESC LIMIT 1;

-- name: prune_by_count
-- Retention: keep at most `keep` events per run.
DELETE FROM outlast_events e USING outlast_runs r
WHERE e.run_id = r.id AND e.seq <= r.last_seq - %(keep)s;

-- name: prune_by_age
-- Retention: drop events older than `age` seconds.
DELETE FROM outlast_events WHERE created_at < now() - make_interval(secs => %(age)s::float8);

-- name: w_withdraw
-- Withdraw a run's open and answered waits (it waits no more).
UPDATE outlast_waits SET status = 'withdrawn'
WHERE run_id = %(run_id)s AND status IN ('open', 'answered');

-- name: set_activity
-- Record a run's activity and usage, fenced by the lease.
UPDATE outlast_runs
SET activity = %(activity)s::jsonb, usage = COALESCE(%(usage)s::jsonb, usage)
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_supervision
-- Record the supervisor's memory of a run, fenced by the lease.
UPDATE outlast_runs SET supervision = %(supervision)s::jsonb
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_budget
-- Record a run's budget, fenced by the lease.
UPDATE outlast_runs SET budget = %(budget)s::jsonb
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: w_consume
-- An answered wait the runtime consumed becomes resumed.
UPDATE outlast_waits SET status = 'resumed' WHERE id = %(id)s AND status = 'answered'
RETURNING id;

-- name: e_fence
-- The run is still held by this lease: an effect starts only then.
SELECT 1 AS held FROM outlast_runs
WHERE id = %(run_id)s AND worker_id = %(worker_id)s AND lease_epoch = %(epoch)s
  AND status IN ('running', 'cancelling') FOR KEY SHARE;

-- name: e_begin
-- Record an effect started, unless its key is in the ledger already.
INSERT INTO outlast_effects (run_id, key, tool, args_hash, args, idempotent, status,
                             compensate, compensates)
VALUES (%(run_id)s, %(key)s, %(tool)s, %(args_hash)s, %(args)s::jsonb, %(idempotent)s, 'started',
        %(compensate)s, %(compensates)s)
ON CONFLICT (run_id, key) DO NOTHING
RETURNING *;

-- name: e_get
-- One effect of a run by key (locked on Postgres).
SELECT * FROM outlast_effects WHERE run_id = %(run_id)s AND key = %(key)s FOR UPDATE;

-- name: e_retry
-- Start a recorded effect again: one more call, its error cleared.
UPDATE outlast_effects SET status = 'started', calls = calls + 1, error = NULL
WHERE run_id = %(run_id)s AND key = %(key)s
RETURNING *;

-- name: e_finish
-- Record how an effect's call ended, and when.
UPDATE outlast_effects
SET status = %(status)s, result = %(result)s::jsonb, error = %(error)s,
    finished_at = clock_timestamp()
WHERE run_id = %(run_id)s AND key = %(key)s
RETURNING *;

-- name: e_list
-- A run's ledger, in the order its effects started.
SELECT * FROM outlast_effects WHERE run_id = %(run_id)s ORDER BY started_at, key;

-- name: count_active
-- How many runs of a principal hold or wait for a worker.
SELECT count(*) AS n FROM outlast_runs
WHERE principal = %(principal)s AND status IN ('queued', 'running', 'cancelling');
