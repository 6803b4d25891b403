-- Named statements on the checkpoints file (LangGraph's AsyncSqliteSaver's tables
-- `checkpoints` and `writes`), run on the saver's own connection (store/pruning.py).
-- LangGraph's SQLite saver has no prune of its own; the Postgres saver's is used there.

-- name: cp_prune_subgraph_calls
-- A subgraph call's namespace (its task id after a ':') goes when the root checkpoint it
-- was called from is not the root's latest: the call is over, and the next call of the
-- subgraph makes a namespace of its own. A call from the latest (an interrupt inside
-- the subgraph) is kept, whole, for its resume.
DELETE FROM checkpoints
WHERE thread_id = :thread_id
  AND checkpoint_ns IN (
      SELECT c.checkpoint_ns FROM checkpoints c
      WHERE c.thread_id = :thread_id AND instr(c.checkpoint_ns, ':') > 0
        AND c.checkpoint_id = (SELECT max(x.checkpoint_id) FROM checkpoints x
                               WHERE x.thread_id = c.thread_id
                                 AND x.checkpoint_ns = c.checkpoint_ns)
        AND json_extract(CAST(c.metadata AS TEXT), '$.parents.""')
            IS NOT (SELECT max(r.checkpoint_id) FROM checkpoints r
                    WHERE r.thread_id = c.thread_id AND r.checkpoint_ns = ''));

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
