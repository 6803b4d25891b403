-- Named queries for the SQLite store (named :parameters). Multi-step writes run inside
-- BEGIN IMMEDIATE, which takes the database write lock up front, so seq assignment and
-- lease checks are serialized exactly as Postgres serializes them with row locks.
-- Database time: (SELECT now FROM outlast_clock), unix seconds in ms (0014_clock.sql).

-- name: insert_run
-- Accept a run: its row, or nothing if its idempotency key exists or its thread belongs to
-- another owner than `thread_owner` (the caller's own, or one the app's auth.py shares with
-- it): the statement refuses, whatever its caller checked first. One writer at a time, so
-- no thread row can appear between this check and touch_thread in the same transaction.
INSERT INTO outlast_runs (id, principal, thread_id, graph, status, input, config, metadata,
                          budget, idempotency_key, fingerprint, max_attempts, last_seq,
                          created_at, updated_at, options)
SELECT :id, :principal, :thread_id, :graph, 'queued', :input, :config, :metadata, :budget,
       :idempotency_key, :fingerprint, :max_attempts, 1,
       (SELECT now FROM outlast_clock), (SELECT now FROM outlast_clock),
       :options
WHERE NOT EXISTS (SELECT 1 FROM outlast_threads
                  WHERE thread_id = :thread_id AND principal <> :thread_owner)
ON CONFLICT (principal, idempotency_key) DO NOTHING
RETURNING *;

-- name: touch_thread
-- Create or touch the run's thread row (LangGraph's clients list threads); a new one gets
-- the metadata the app's auth.py stamped and the deployment's default TTL.
INSERT INTO outlast_threads (thread_id, principal, metadata, created_at, updated_at, ttl_minutes,
                             ttl_strategy)
VALUES (:thread_id, :principal, :metadata, (SELECT now FROM outlast_clock),
        (SELECT now FROM outlast_clock), :thread_ttl, :thread_ttl_strategy)
ON CONFLICT (thread_id) DO UPDATE SET updated_at = excluded.updated_at;

-- name: insert_event
-- One event at a seq the caller took.
INSERT INTO outlast_events (run_id, seq, type, data, created_at)
VALUES (:run_id, :seq, :type, :data, (SELECT now FROM outlast_clock));

-- name: get_by_key
-- The run a principal accepted under an idempotency key.
SELECT * FROM outlast_runs WHERE principal = :principal AND idempotency_key = :key;

-- name: get_run
-- One run by id.
SELECT * FROM outlast_runs WHERE id = :id;

-- name: list_runs
-- A page of a principal's runs (any principal's: NULL), newest first, by thread and status if given.
SELECT * FROM outlast_runs
WHERE (:principal IS NULL OR principal = :principal)
  AND (:thread_id IS NULL OR thread_id = :thread_id)
  AND (:status IS NULL OR status = :status)
  AND (:before IS NULL OR pos < :before)
ORDER BY pos DESC
LIMIT :limit;

-- name: read_events
-- A run's events after a seq, in order, at most `limit`.
SELECT run_id, seq, type, data, created_at FROM outlast_events
WHERE run_id = :run_id AND seq > :after
ORDER BY seq
LIMIT :limit;

-- name: first_retained_seq
-- The lowest seq retention kept of a run's log.
SELECT min(seq) AS seq FROM outlast_events WHERE run_id = :run_id;

-- name: prune_events
-- Drop a run's events up to a seq (its last_seq stays).
DELETE FROM outlast_events WHERE run_id = :run_id AND seq <= :upto RETURNING seq;

-- name: count_runs_by_status
-- How many runs have each status.
-- /metrics, at scrape time: one pass over the runs.
SELECT status, count(*) AS n FROM outlast_runs GROUP BY status;

-- name: claim
-- Claim runs for a worker: up to `limit`, oldest first, or only run `id` (eager start).
-- (See the Postgres query; the write transaction is the thread's lock here.)
UPDATE outlast_runs
SET status = CASE WHEN status = 'cancelling' THEN 'cancelling' ELSE 'running' END,
    worker_id = :worker_id, lease_epoch = lease_epoch + 1,
    lease_expires_at = (SELECT now FROM outlast_clock) + :ttl,
    attempts = attempts + 1, last_seq = last_seq + 1, claim_seq = last_seq + 1,
    updated_at = (SELECT now FROM outlast_clock)
WHERE id IN (
    SELECT q.id FROM outlast_runs q
    WHERE (q.status = 'queued' OR (q.status = 'cancelling' AND q.worker_id IS NULL))
      AND (:id IS NULL OR q.id = :id)
      AND NOT EXISTS (
          SELECT 1 FROM outlast_runs o
          WHERE o.thread_id = q.thread_id AND o.id <> q.id
            AND (o.status IN ('running', 'cancelling', 'waiting')
                 OR (o.status = 'queued' AND (o.pos < q.pos OR :id IS NOT NULL))))
    ORDER BY q.pos LIMIT :limit)
RETURNING *;

-- name: renew
-- Extend a worker's leases (on some of its runs, or all), each run's epoch and status back.
UPDATE outlast_runs
SET lease_expires_at = (SELECT now FROM outlast_clock) + :ttl
WHERE worker_id = :worker_id AND status IN ('running', 'cancelling')
  AND (:ids IS NULL OR id IN (SELECT value FROM json_each(:ids)))
RETURNING id, lease_epoch, status;

-- name: bump_seq
-- Take the next seqs for a batch of events, fenced by the lease.
UPDATE outlast_runs
SET last_seq = last_seq + :n, updated_at = (SELECT now FROM outlast_clock)
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING last_seq;

-- name: finish
-- End a run in a terminal status with its event, fenced by the lease; drops the lease.
UPDATE outlast_runs
SET status = :status, result = :result, error = :error, worker_id = NULL,
    lease_expires_at = NULL, activity = NULL, last_seq = last_seq + 1,
    updated_at = (SELECT now FROM outlast_clock)
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id, last_seq, status,
          -- the queue hears of it only if the thread has a run queued behind (see Postgres)
          EXISTS (SELECT 1 FROM outlast_runs o
                  WHERE o.thread_id = outlast_runs.thread_id AND o.status = 'queued') AS successor;

-- ---------------------------------------------------------------------------------------
-- The cold-path transitions (see the Postgres file).

-- name: run_lock
-- The run's row, for a cold-path transition (BEGIN IMMEDIATE has locked the database).
SELECT * FROM outlast_runs WHERE id = :id;

-- name: run_lock_leased
-- The run's row, if `worker_id` still holds it at `epoch` (no row: the lease is lost).
SELECT * FROM outlast_runs
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling');

-- name: run_lock_expired
-- Up to `limit` runs whose worker lease expired on database time, oldest first, but
-- those the reaping worker (`holder`) holds and executes (`held`, a JSON array of ids).
-- (No `grace` after a restart: the embedded database restarts with its process.)
SELECT * FROM outlast_runs
WHERE status IN ('running', 'cancelling')
  AND lease_expires_at < (SELECT now FROM outlast_clock)
  AND (worker_id IS NOT :holder OR id NOT IN (SELECT value FROM json_each(:held)))
ORDER BY lease_expires_at
LIMIT :limit;

-- name: run_progress
-- Whether the attempt of a run saved a step since its claim (see the Postgres query).
SELECT EXISTS (
    SELECT 1 FROM outlast_runs r JOIN outlast_events e ON e.run_id = r.id
    WHERE r.id = :run_id AND e.seq > r.claim_seq AND e.type = 'node.updated'
      AND json_extract(e.data, '$.ns') = '' AND json_extract(e.data, '$.recovered') IS NULL
) AS progressed;

-- name: run_apply
-- A cold-path transition as store/transitions.py decided it; last_seq + 1 for its event.
UPDATE outlast_runs
SET status = :status, ending = :ending, error = :error, attempts = attempts + :attempts,
    worker_id = CASE WHEN :keep_worker THEN worker_id END,
    lease_expires_at = CASE WHEN :keep_worker THEN lease_expires_at END,
    activity = CASE WHEN :keep_worker THEN activity END,
    lease_epoch = lease_epoch + :epoch,
    last_seq = last_seq + 1, updated_at = (SELECT now FROM outlast_clock)
WHERE id = :run_id
RETURNING *;

-- name: run_set_ending
-- Record how a run owing work ends (set_ending), on a row read under its lease.
UPDATE outlast_runs SET ending = :ending, updated_at = (SELECT now FROM outlast_clock)
WHERE id = :run_id;

-- ---------------------------------------------------------------------------------------
-- Run reads, the event log, waits, signals, parking, threads, retention (see the Postgres
-- file; same names, same meaning).

-- name: bump_any
-- Take the next `n` seqs of a run, unfenced (the caller decided it may write).
UPDATE outlast_runs SET last_seq = last_seq + :n,
    updated_at = (SELECT now FROM outlast_clock)
WHERE id = :run_id
RETURNING last_seq;

-- name: w_insert
-- A new open wait of a run, with its wake time and lease.
INSERT INTO outlast_waits (id, run_id, interrupt_id, kind, status, object, prompt, schema,
                           event_keys, has_default, default_answer, probe, since, wake_at,
                           lease_expires_at)
VALUES (:id, :run_id, :interrupt_id, :kind, 'open', :object, :prompt, :schema, :event_keys,
        :has_default, :default_answer, :probe, (SELECT now FROM outlast_clock),
        COALESCE(:wake_at, (SELECT now FROM outlast_clock) + :wake_in),
        COALESCE(:wake_at, (SELECT now FROM outlast_clock) + :wake_in) + :lease_grace)
RETURNING *;

-- name: w_find_live
-- A run's live (open or answered) wait for an interrupt id.
SELECT * FROM outlast_waits
WHERE run_id = :run_id AND interrupt_id = :interrupt_id AND status IN ('open', 'answered');

-- name: w_resume_consumed
-- Answered waits whose interrupt the graph no longer has pending become resumed.
UPDATE outlast_waits SET status = 'resumed'
WHERE run_id = :run_id AND status = 'answered'
  AND interrupt_id NOT IN (SELECT value FROM json_each(:pending));

-- name: w_count_answered
-- How many of a run's waits are answered (not yet consumed).
SELECT count(*) AS n FROM outlast_waits WHERE run_id = :run_id AND status = 'answered';

-- name: w_get
-- One wait by id, locked (Postgres) for an answer.
SELECT * FROM outlast_waits WHERE id = :id;

-- name: w_answer
-- Answer an open wait; no row when it is not open any more.
UPDATE outlast_waits
SET status = 'answered', answer_key = :key, answer = :answer, answered_how = :how,
    answered_at = (SELECT now FROM outlast_clock),
    last_signal_at = (SELECT now FROM outlast_clock)
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
-- A run's waits, of one status if given, oldest first.
SELECT * FROM outlast_waits
WHERE run_id = :run_id AND (:status IS NULL OR status = :status)
ORDER BY since, id;

-- name: w_settle
-- A run's waits at its end: answered become resumed, open ones withdrawn.
UPDATE outlast_waits
SET status = CASE WHEN status = 'answered' THEN 'resumed' ELSE 'withdrawn' END
WHERE run_id = :run_id AND status IN ('open', 'answered')
RETURNING id;

-- name: run_requeue_if_waiting
-- Queue a waiting run again (one of its waits was answered).
UPDATE outlast_runs SET status = 'queued', updated_at = (SELECT now FROM outlast_clock)
WHERE id = :run_id AND status = 'waiting'
RETURNING id;

-- name: sig_insert
-- Store a signal (for the lookback of waits parked later).
INSERT INTO outlast_signals (key, payload, principal, created_at)
VALUES (:key, :payload, :principal, (SELECT now FROM outlast_clock))
RETURNING id;

-- name: sig_match
-- The open event waits of a principal's runs that a signal's key answers.
SELECT w.* FROM outlast_waits w JOIN outlast_runs r ON r.id = w.run_id
WHERE w.status = 'open' AND w.kind = 'event'
  AND EXISTS (SELECT 1 FROM json_each(w.event_keys) WHERE value = :key)
  AND r.principal = :principal
ORDER BY w.since;

-- name: sig_lookback
-- The latest signal on one of a wait's keys within the lookback window.
SELECT key, payload FROM outlast_signals
WHERE key IN (SELECT value FROM json_each(:keys))
  AND principal = (SELECT principal FROM outlast_runs WHERE id = :run_id)
  AND created_at >= (SELECT now FROM outlast_clock) - :lookback
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: w_due
-- Claim waits whose wake time has come, holding them a while from other workers.
UPDATE outlast_waits SET wake_at = (SELECT now FROM outlast_clock) + :hold
WHERE id IN (SELECT id FROM outlast_waits
             WHERE status = 'open' AND wake_at <= (SELECT now FROM outlast_clock)
             ORDER BY wake_at LIMIT :limit)
RETURNING *;

-- name: w_next_due
-- Seconds until the next open wait is due.
SELECT min(wake_at) - (SELECT now FROM outlast_clock) AS seconds
FROM outlast_waits WHERE status = 'open' AND wake_at IS NOT NULL;

-- name: w_probe_ok
-- A wait's probe answered: renew its lease and schedule the next probe.
UPDATE outlast_waits
SET renewals = renewals + 1, failures = 0,
    last_signal_at = (SELECT now FROM outlast_clock),
    wake_at = (SELECT now FROM outlast_clock) + :every,
    lease_expires_at = (SELECT now FROM outlast_clock) + 2 * :every
WHERE id = :id AND status = 'open'
RETURNING *;

-- name: w_probe_failed
-- A wait's probe failed: count it and schedule the next probe.
UPDATE outlast_waits
SET failures = failures + 1, wake_at = (SELECT now FROM outlast_clock) + :every
WHERE id = :id AND status = 'open'
RETURNING *;

-- name: thread_lock
-- Serialize the writes of one thread until the transaction ends.
SELECT 1;

-- name: thread_active
-- The oldest active (queued, running, cancelling, waiting) run of a thread.
SELECT * FROM outlast_runs
WHERE thread_id = :thread_id AND status IN ('queued', 'running', 'cancelling', 'waiting')
ORDER BY pos LIMIT 1;

-- name: thread_latest
-- The newest run of a thread.
SELECT * FROM outlast_runs WHERE thread_id = :thread_id ORDER BY pos DESC LIMIT 1;

-- name: prune_by_count
-- Retention: keep at most `keep` events per run.
DELETE FROM outlast_events
WHERE seq <= (SELECT r.last_seq FROM outlast_runs r WHERE r.id = outlast_events.run_id) - :keep;

-- name: prune_by_age
-- Retention: drop events older than `age` seconds.
DELETE FROM outlast_events
WHERE created_at < (SELECT now FROM outlast_clock) - :age;

-- name: w_withdraw
-- Withdraw a run's open and answered waits (it waits no more).
UPDATE outlast_waits SET status = 'withdrawn'
WHERE run_id = :run_id AND status IN ('open', 'answered');

-- name: set_activity
-- Record a run's activity and usage, fenced by the lease.
UPDATE outlast_runs
SET activity = :activity, usage = COALESCE(:usage, usage)
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_supervision
-- Record the supervisor's memory of a run, fenced by the lease.
UPDATE outlast_runs SET supervision = :supervision
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: set_budget
-- Record a run's budget, fenced by the lease.
UPDATE outlast_runs SET budget = :budget
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling')
RETURNING id;

-- name: w_consume
-- An answered wait the runtime consumed becomes resumed.
UPDATE outlast_waits SET status = 'resumed' WHERE id = :id AND status = 'answered'
RETURNING id;

-- name: e_fence
-- The run is still held by this lease: an effect starts only then.
SELECT 1 AS held FROM outlast_runs
WHERE id = :run_id AND worker_id = :worker_id AND lease_epoch = :epoch
  AND status IN ('running', 'cancelling');

-- name: e_begin
-- Record an effect started, unless its key is in the ledger already.
INSERT INTO outlast_effects (run_id, key, tool, args_hash, args, idempotent, status, started_at,
                             compensate, compensates)
VALUES (:run_id, :key, :tool, :args_hash, :args, :idempotent, 'started',
        (SELECT now FROM outlast_clock), :compensate, :compensates)
ON CONFLICT (run_id, key) DO NOTHING
RETURNING *;

-- name: e_get
-- One effect of a run by key (locked on Postgres).
SELECT * FROM outlast_effects WHERE run_id = :run_id AND key = :key;

-- name: e_retry
-- Start a recorded effect again: one more call, its error cleared.
UPDATE outlast_effects SET status = 'started', calls = calls + 1, error = NULL
WHERE run_id = :run_id AND key = :key
RETURNING *;

-- name: e_finish
-- Record how an effect's call ended, and when.
UPDATE outlast_effects
SET status = :status, result = :result, error = :error,
    finished_at = (SELECT now FROM outlast_clock)
WHERE run_id = :run_id AND key = :key
RETURNING *;

-- name: e_list
-- A run's ledger, in the order its effects started.
SELECT * FROM outlast_effects WHERE run_id = :run_id ORDER BY started_at, key;

-- name: count_active
-- How many runs of a principal hold or wait for a worker.
SELECT count(*) AS n FROM outlast_runs
WHERE principal = :principal AND status IN ('queued', 'running', 'cancelling');
