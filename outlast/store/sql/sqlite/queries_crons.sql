-- Named queries for crons (store/cron_ops.py); see the Postgres file of the same name.
-- Writes run inside BEGIN IMMEDIATE: SQLite's one writer stands in for the row locks, so
-- two schedulers never claim one tick. Metadata filters are exact per top-level key.

-- name: cron_now
-- The database's now, which a cron's next tick is computed from.
SELECT now FROM outlast_clock;

-- name: cron_insert
-- A new cron, due at its first tick.
INSERT INTO outlast_crons (cron_id, principal, assistant_id, thread_id, schedule, timezone,
                           payload, metadata, enabled, end_time, on_run_completed,
                           next_run_at, created_at, updated_at)
VALUES (:cron_id, :principal, :assistant_id, :thread_id, :schedule, :timezone, :payload,
        :metadata, :enabled, :end_time, :on_run_completed, :next_run_at,
        (SELECT now FROM outlast_clock), (SELECT now FROM outlast_clock))
RETURNING *;

-- name: cron_get
-- One cron of a principal.
SELECT * FROM outlast_crons WHERE cron_id = :cron_id AND (:principal IS NULL OR principal = :principal);

-- name: cron_lock
-- One cron of a principal, for an update (BEGIN IMMEDIATE holds the write lock).
SELECT * FROM outlast_crons WHERE cron_id = :cron_id AND (:principal IS NULL OR principal = :principal);

-- name: cron_update
-- Replace a cron's fields (its next tick re-planned or kept by the caller).
UPDATE outlast_crons
SET schedule = :schedule, timezone = :timezone, payload = :payload, metadata = :metadata,
    enabled = :enabled, end_time = :end_time, on_run_completed = :on_run_completed,
    next_run_at = :next_run_at, updated_at = (SELECT now FROM outlast_clock)
WHERE cron_id = :cron_id AND (:principal IS NULL OR principal = :principal)
RETURNING *;

-- name: cron_delete
-- Delete a principal's cron.
DELETE FROM outlast_crons WHERE cron_id = :cron_id AND (:principal IS NULL OR principal = :principal)
RETURNING cron_id;

-- name: cron_search
-- A page of a principal's crons, filtered and sorted as asked.
SELECT * FROM outlast_crons c
WHERE (:principal IS NULL OR c.principal = :principal)
  AND (:assistant_id IS NULL OR c.assistant_id = :assistant_id)
  AND (:thread_id IS NULL OR c.thread_id = :thread_id)
  AND (:enabled IS NULL OR c.enabled = :enabled)
  AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(:metadata, '{}')) f
                  WHERE NOT EXISTS (SELECT 1 FROM json_each(c.metadata) m
                                    WHERE m.key = f.key AND m.type = f.type
                                      AND m.value IS f.value))
ORDER BY
    CASE WHEN NOT :desc THEN
        CASE :sort_by WHEN 'cron_id' THEN c.cron_id
                      WHEN 'assistant_id' THEN c.assistant_id
                      WHEN 'thread_id' THEN c.thread_id END END ASC NULLS LAST,
    CASE WHEN NOT :desc THEN
        CASE :sort_by WHEN 'created_at' THEN c.created_at
                      WHEN 'updated_at' THEN c.updated_at
                      WHEN 'next_run_date' THEN c.next_run_at
                      WHEN 'end_time' THEN c.end_time END END ASC NULLS LAST,
    CASE WHEN :desc THEN
        CASE :sort_by WHEN 'cron_id' THEN c.cron_id
                      WHEN 'assistant_id' THEN c.assistant_id
                      WHEN 'thread_id' THEN c.thread_id END END DESC NULLS LAST,
    CASE WHEN :desc THEN
        CASE :sort_by WHEN 'created_at' THEN c.created_at
                      WHEN 'updated_at' THEN c.updated_at
                      WHEN 'next_run_date' THEN c.next_run_at
                      WHEN 'end_time' THEN c.end_time END END DESC NULLS LAST,
    c.cron_id ASC
LIMIT :limit OFFSET :offset;

-- name: cron_count
-- How many of a principal's crons match a search.
SELECT count(*) AS n FROM outlast_crons c
WHERE (:principal IS NULL OR c.principal = :principal)
  AND (:assistant_id IS NULL OR c.assistant_id = :assistant_id)
  AND (:thread_id IS NULL OR c.thread_id = :thread_id)
  AND (:enabled IS NULL OR c.enabled = :enabled)
  AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(:metadata, '{}')) f
                  WHERE NOT EXISTS (SELECT 1 FROM json_each(c.metadata) m
                                    WHERE m.key = f.key AND m.type = f.type
                                      AND m.value IS f.value));

-- name: cron_due
-- Crons to fire now: due ones, and ticks claimed by a scheduler that has not recorded
-- them as fired within its hold.
SELECT c.*, (SELECT now FROM outlast_clock) AS db_now FROM outlast_crons c
WHERE (c.firing_at IS NULL AND c.enabled = 1
       AND c.next_run_at <= (SELECT now FROM outlast_clock))
   OR (c.firing_at IS NOT NULL AND c.claimed_until <= (SELECT now FROM outlast_clock))
ORDER BY COALESCE(c.firing_at, c.next_run_at), c.cron_id
LIMIT :limit;

-- name: cron_claim
-- Record the tick a scheduler fires (held for it) and the cron's next tick.
UPDATE outlast_crons
SET firing_at = :firing_at, next_run_at = :next_run_at,
    claimed_until = CASE WHEN :firing_at IS NULL THEN NULL
                         ELSE (SELECT now FROM outlast_clock) + :hold END
WHERE cron_id = :cron_id
RETURNING *;

-- name: cron_fired
-- A claimed tick is done with (unless the cron moved on to another tick meanwhile).
UPDATE outlast_crons SET firing_at = NULL, claimed_until = NULL
WHERE cron_id = :cron_id AND firing_at = :at;

-- name: cron_next_in
-- Seconds until cron_due has something to take (NULL: never).
SELECT min(CASE WHEN firing_at IS NULL THEN next_run_at ELSE claimed_until END)
       - (SELECT now FROM outlast_clock) AS s
FROM outlast_crons
WHERE firing_at IS NOT NULL OR (enabled = 1 AND next_run_at IS NOT NULL);
