-- A run is never attached to another owner's thread, whatever its caller checked first:
-- the run insert (queries.sql, insert_run) names the principal it expects to own the
-- thread and calls this when the thread row says otherwise, so the statement fails, the
-- run is not written, and the client reads SQLSTATE OL002 (store/postgres.py).
CREATE FUNCTION outlast_thread_refused(p_thread text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'thread % belongs to another owner', p_thread USING ERRCODE = 'OL002';
END
$$;
