-- Threads of stateless LangGraph runs (on_completion=delete); see the Postgres migration.
ALTER TABLE outlast_threads ADD COLUMN temporary INTEGER NOT NULL DEFAULT 0;
CREATE INDEX outlast_threads_temporary ON outlast_threads (thread_id) WHERE temporary = 1;
