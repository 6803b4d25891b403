-- Named statements on the checkpoints file (LangGraph's AsyncSqliteSaver's tables
-- `checkpoints` and `writes`), run on the saver's own connection, under its lock
-- (store/sqlite_saver.py). LangGraph's SQLite saver has no copy or prune of its own; the
-- Postgres saver's prune is upstream's, its copy in sql/postgres/queries_checkpoints.sql.

-- name: cp_thread_has_checkpoints
-- Whether a thread has a checkpoint in any namespace (a copy refuses such a target).
SELECT 1 FROM checkpoints WHERE thread_id = :thread_id LIMIT 1;

-- name: cp_copy_checkpoints
-- A thread's checkpoints, every namespace, as the target's: ids, parents, metadata kept.
INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
                         type, checkpoint, metadata)
SELECT :target, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
       metadata
FROM checkpoints
WHERE thread_id = :source;

-- name: cp_copy_writes
-- The copied checkpoints' pending writes (a resume reads them), as the target's.
INSERT OR IGNORE INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path,
                              idx, channel, type, value)
SELECT :target, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value
FROM writes
WHERE thread_id = :source;

-- name: cp_delete_checkpoints
-- Every checkpoint of a thread, in every namespace (a prune's `delete`).
DELETE FROM checkpoints WHERE thread_id = :thread_id;

-- name: cp_delete_writes
-- Every pending write of a thread (a prune's `delete`).
DELETE FROM writes WHERE thread_id = :thread_id;

-- name: cp_prune_subgraph_calls
-- A subgraph call's namespace (its task id after a ':') goes when the root checkpoint it
-- was called from is saved and is not the root's latest: the call is over, and the next
-- call of the subgraph makes a namespace of its own. A call from the latest (an interrupt
-- inside the subgraph) is kept, whole, for its resume; so is one whose root checkpoint is
-- not saved (yet, or at all: a namespace no root call made), as upstream's Postgres
-- prune keeps it.
DELETE FROM checkpoints
WHERE thread_id = :thread_id
  AND checkpoint_ns IN (
      SELECT c.checkpoint_ns FROM checkpoints c
      JOIN checkpoints r
        ON r.thread_id = c.thread_id AND r.checkpoint_ns = ''
       AND r.checkpoint_id = json_extract(CAST(c.metadata AS TEXT), '$.parents.""')
      WHERE c.thread_id = :thread_id AND instr(c.checkpoint_ns, ':') > 0
        AND c.checkpoint_id = (SELECT max(x.checkpoint_id) FROM checkpoints x
                               WHERE x.thread_id = c.thread_id
                                 AND x.checkpoint_ns = c.checkpoint_ns)
        AND r.checkpoint_id < (SELECT max(l.checkpoint_id) FROM checkpoints l
                               WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = ''));

-- name: cp_prune_keep_latest
-- All but the latest checkpoint of each namespace (checkpoint ids grow with time).
DELETE FROM checkpoints
WHERE thread_id = :thread_id
  AND checkpoint_id < (SELECT max(x.checkpoint_id) FROM checkpoints x
                       WHERE x.thread_id = checkpoints.thread_id
                         AND x.checkpoint_ns = checkpoints.checkpoint_ns);

-- name: cp_prune_parents
-- What is kept has no parent left: its history starts with it.
UPDATE checkpoints SET parent_checkpoint_id = NULL
WHERE thread_id = :thread_id AND parent_checkpoint_id IS NOT NULL;

-- name: cp_prune_writes
-- The pending writes of the checkpoints gone (the kept ones' stay: a resume reads them).
DELETE FROM writes
WHERE thread_id = :thread_id
  AND NOT EXISTS (SELECT 1 FROM checkpoints c
                  WHERE c.thread_id = writes.thread_id
                    AND c.checkpoint_ns = writes.checkpoint_ns
                    AND c.checkpoint_id = writes.checkpoint_id);
