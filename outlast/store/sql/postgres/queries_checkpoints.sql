-- Named statements on LangGraph's checkpoint tables (`checkpoints`, `checkpoint_blobs`,
-- `checkpoint_writes`), run by the saver on its own connection (store/pg_saver.py).
-- The saver's prune is upstream's (AsyncPostgresSaver.aprune); the copy is outlast's.

-- name: cp_thread_has_checkpoints
-- Whether a thread has a checkpoint in any namespace (a copy refuses such a target).
SELECT 1 FROM checkpoints WHERE thread_id = %(thread_id)s LIMIT 1;

-- name: cp_copy_checkpoints
-- A thread's checkpoints, every namespace, as the target's: ids, parents, metadata kept.
INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
                         type, checkpoint, metadata)
SELECT %(target)s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
       metadata
FROM checkpoints
WHERE thread_id = %(source)s;

-- name: cp_copy_blobs
-- The channel values the copied checkpoints name (by channel and version), as the target's.
INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
SELECT %(target)s, checkpoint_ns, channel, version, type, blob
FROM checkpoint_blobs
WHERE thread_id = %(source)s
ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING;

-- name: cp_copy_writes
-- The copied checkpoints' pending writes (a resume reads them), as the target's.
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path,
                               idx, channel, type, blob)
SELECT %(target)s, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type,
       blob
FROM checkpoint_writes
WHERE thread_id = %(source)s
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING;
