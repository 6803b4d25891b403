-- A thread's TTL strategy (langgraph.json's `checkpointer.ttl.strategy`, a thread's own
-- `ttl.strategy`): 'delete' deletes the thread past its TTL, 'keep_latest' keeps it with
-- only its latest checkpoint per namespace. pruned_at: when keep_latest last pruned it, so
-- the sweep prunes it again only after it is updated again (and a TTL passes).
ALTER TABLE outlast_threads
    ADD COLUMN ttl_strategy text NOT NULL DEFAULT 'delete'
        CHECK (ttl_strategy IN ('delete', 'keep_latest')),
    ADD COLUMN pruned_at timestamptz;
