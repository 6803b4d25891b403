-- Crons (the LangGraph face's client.crons; store/cron_ops.py): a run request made on a
-- schedule. next_run_at is the next tick (NULL: never again, or disabled); firing_at a
-- tick a scheduler claimed and has not recorded as fired, held until claimed_until, after
-- which another scheduler fires it again under the same idempotency key. A thread's crons
-- go with the thread.
CREATE TABLE outlast_crons (
    cron_id          text PRIMARY KEY,
    principal        text NOT NULL DEFAULT '',
    assistant_id     text NOT NULL,
    thread_id        text REFERENCES outlast_threads (thread_id) ON DELETE CASCADE,
    schedule         text NOT NULL,
    timezone         text,
    payload          jsonb NOT NULL DEFAULT '{}'::jsonb,
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
    enabled          boolean NOT NULL DEFAULT true,
    end_time         timestamptz,
    on_run_completed text CHECK (on_run_completed IN ('delete', 'keep')),
    next_run_at      timestamptz,
    firing_at        timestamptz,
    claimed_until    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX outlast_crons_principal ON outlast_crons (principal, created_at DESC);
CREATE INDEX outlast_crons_thread ON outlast_crons (thread_id);
-- what the schedulers look for: crons due, and claimed ticks whose claimer went away
CREATE INDEX outlast_crons_due ON outlast_crons (next_run_at)
    WHERE enabled AND firing_at IS NULL;
CREATE INDEX outlast_crons_firing ON outlast_crons (claimed_until) WHERE firing_at IS NOT NULL;
