-- The fence of a checkpoint write as a statement that fails. The saver sends the fence
-- and its writes as one pipeline, which the server runs as one implicit transaction up
-- to the Sync: when the lease is gone the fence fails, the server skips and rolls back
-- the writes, and the client reads SQLSTATE OL001 (outlast/store/pg_saver.py). FOR KEY SHARE, as before: the reaper's FOR UPDATE SKIP LOCKED passes
-- over a run while its holder's checkpoint is in flight, and the holder's own event
-- appends (which update last_seq, not the key) never wait for it.
CREATE FUNCTION outlast_fence(p_run uuid, p_worker text, p_epoch bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM outlast_runs
     WHERE id = p_run AND worker_id = p_worker AND lease_epoch = p_epoch
       AND status IN ('running', 'cancelling')
       FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run %: lease epoch % is no longer held by %', p_run, p_epoch, p_worker
            USING ERRCODE = 'OL001';
    END IF;
END
$$;
