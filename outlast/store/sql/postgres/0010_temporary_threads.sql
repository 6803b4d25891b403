-- Threads of stateless LangGraph runs (on_completion=delete): deleted by retention once
-- their run has ended (OUTLAST_TEMPORARY_THREAD_TTL after it).
ALTER TABLE outlast_threads ADD COLUMN temporary boolean NOT NULL DEFAULT false;
CREATE INDEX outlast_threads_temporary ON outlast_threads (thread_id) WHERE temporary;
