-- Named queries for crons (store/cron_ops.py). The face's statements name the principal:
-- a cron belongs to whoever made it. The scheduler's (cron_due, cron_claim, cron_fired,
-- cron_next_in) see every principal's. Times are the database's (now(): the
-- transaction's start, one instant for a claim and its updates).

-- name: cron_now
-- The database's now, which a cron's next tick is computed from.
SELECT now() AS now;

-- name: cron_insert
-- A new cron, due at its first tick.
INSERT INTO outlast_crons (cron_id, principal, assistant_id, thread_id, schedule, timezone,
                           payload, metadata, enabled, end_time, on_run_completed,
                           next_run_at)
VALUES (%(cron_id)s, %(principal)s, %(assistant_id)s, %(thread_id)s, %(schedule)s,
        %(timezone)s, %(payload)s::jsonb, %(metadata)s::jsonb, %(enabled)s,
        %(end_time)s::timestamptz, %(on_run_completed)s, %(next_run_at)s::timestamptz)
RETURNING *;

-- name: cron_get
-- One cron of a principal.
SELECT * FROM outlast_crons WHERE cron_id = %(cron_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s);

-- name: cron_lock
-- One cron of a principal, locked for an update.
SELECT * FROM outlast_crons WHERE cron_id = %(cron_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s)
FOR UPDATE;

-- name: cron_update
-- Replace a cron's fields (its next tick re-planned or kept by the caller).
UPDATE outlast_crons
SET schedule = %(schedule)s, timezone = %(timezone)s, payload = %(payload)s::jsonb,
    metadata = %(metadata)s::jsonb, enabled = %(enabled)s,
    end_time = %(end_time)s::timestamptz, on_run_completed = %(on_run_completed)s,
    next_run_at = %(next_run_at)s::timestamptz, updated_at = clock_timestamp()
WHERE cron_id = %(cron_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s)
RETURNING *;

-- name: cron_delete
-- Delete a principal's cron.
DELETE FROM outlast_crons WHERE cron_id = %(cron_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s)
RETURNING cron_id;

-- name: cron_search
-- A page of a principal's crons, filtered and sorted as asked.
SELECT * FROM outlast_crons c
WHERE (%(principal)s::text IS NULL OR c.principal = %(principal)s)
  AND (%(assistant_id)s::text IS NULL OR c.assistant_id = %(assistant_id)s::text)
  AND (%(thread_id)s::text IS NULL OR c.thread_id = %(thread_id)s::text)
  AND (%(enabled)s::boolean IS NULL OR c.enabled = %(enabled)s::boolean)
  AND NOT EXISTS (SELECT 1 FROM jsonb_each(COALESCE(%(metadata)s::jsonb, '{}'::jsonb)) f
                  WHERE c.metadata -> f.key IS DISTINCT FROM f.value)
ORDER BY
    CASE WHEN NOT %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'cron_id' THEN c.cron_id
                               WHEN 'assistant_id' THEN c.assistant_id
                               WHEN 'thread_id' THEN c.thread_id END END COLLATE "C"
        ASC NULLS LAST,
    CASE WHEN NOT %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'created_at' THEN c.created_at
                               WHEN 'updated_at' THEN c.updated_at
                               WHEN 'next_run_date' THEN c.next_run_at
                               WHEN 'end_time' THEN c.end_time END END ASC NULLS LAST,
    CASE WHEN %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'cron_id' THEN c.cron_id
                               WHEN 'assistant_id' THEN c.assistant_id
                               WHEN 'thread_id' THEN c.thread_id END END COLLATE "C"
        DESC NULLS LAST,
    CASE WHEN %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'created_at' THEN c.created_at
                               WHEN 'updated_at' THEN c.updated_at
                               WHEN 'next_run_date' THEN c.next_run_at
                               WHEN 'end_time' THEN c.end_time END END DESC NULLS LAST,
    c.cron_id COLLATE "C" ASC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: cron_count
-- How many of a principal's crons match a search.
SELECT count(*) AS n FROM outlast_crons c
WHERE (%(principal)s::text IS NULL OR c.principal = %(principal)s)
  AND (%(assistant_id)s::text IS NULL OR c.assistant_id = %(assistant_id)s::text)
  AND (%(thread_id)s::text IS NULL OR c.thread_id = %(thread_id)s::text)
  AND (%(enabled)s::boolean IS NULL OR c.enabled = %(enabled)s::boolean)
  AND NOT EXISTS (SELECT 1 FROM jsonb_each(COALESCE(%(metadata)s::jsonb, '{}'::jsonb)) f
                  WHERE c.metadata -> f.key IS DISTINCT FROM f.value);

-- name: cron_due
-- Crons to fire now, locked (those another scheduler holds are skipped): due ones, and
-- ticks claimed by a scheduler that has not recorded them as fired within its hold.
SELECT c.*, now() AS db_now FROM outlast_crons c
WHERE (c.firing_at IS NULL AND c.enabled AND c.next_run_at <= now())
   OR (c.firing_at IS NOT NULL AND c.claimed_until <= now())
ORDER BY COALESCE(c.firing_at, c.next_run_at), c.cron_id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: cron_claim
-- Record the tick a scheduler fires (held for it) and the cron's next tick.
UPDATE outlast_crons
SET firing_at = %(firing_at)s::timestamptz, next_run_at = %(next_run_at)s::timestamptz,
    claimed_until = CASE WHEN %(firing_at)s::timestamptz IS NULL THEN NULL
                         ELSE now() + make_interval(secs => %(hold)s) END
WHERE cron_id = %(cron_id)s
RETURNING *;

-- name: cron_fired
-- A claimed tick is done with (unless the cron moved on to another tick meanwhile).
UPDATE outlast_crons SET firing_at = NULL, claimed_until = NULL
WHERE cron_id = %(cron_id)s AND firing_at = %(at)s::timestamptz;

-- name: cron_next_in
-- Seconds until cron_due has something to take (NULL: never).
SELECT EXTRACT(EPOCH FROM min(CASE WHEN firing_at IS NULL THEN next_run_at
                                   ELSE claimed_until END) - now())::float8 AS s
FROM outlast_crons
WHERE firing_at IS NOT NULL OR (enabled AND next_run_at IS NOT NULL);
