-- Named queries for the LangGraph face's user assistants (store/assistants.py); see the
-- Postgres file of the same name. Writes run inside BEGIN IMMEDIATE, so a create, an
-- update (next version number) or a set_latest is serialized like a row lock would.
-- Metadata filters are exact per top-level key (same JSON type and value); text sorts use
-- SQLite's default BINARY collation, code point order for UTF-8, as Python's does.

-- name: a_insert
-- A new assistant, or nothing if its id exists.
INSERT INTO outlast_assistants (assistant_id, principal, graph_id, name, description,
                                config, context, metadata, created_at, updated_at)
VALUES (:assistant_id, :principal, :graph_id, :assistant_name, :description,
        :config, :context, :metadata,
        (SELECT now FROM outlast_clock), (SELECT now FROM outlast_clock))
ON CONFLICT (assistant_id) DO NOTHING
RETURNING *;

-- name: a_snapshot_version
-- The current fields become a version row; its time is the time they became current.
INSERT INTO outlast_assistant_versions (assistant_id, version, graph_id, name, description,
                                        config, context, metadata, created_at)
SELECT assistant_id, version, graph_id, name, description, config, context, metadata,
       updated_at
FROM outlast_assistants WHERE assistant_id = :assistant_id;

-- name: a_owner
-- Who owns an assistant id.
SELECT principal FROM outlast_assistants WHERE assistant_id = :assistant_id;

-- name: a_get
-- One assistant of a principal.
SELECT * FROM outlast_assistants
WHERE assistant_id = :assistant_id AND (:principal IS NULL OR principal = :principal);

-- name: a_lock
-- One assistant of a principal, locked for an update.
-- (BEGIN IMMEDIATE already holds the write lock)
SELECT * FROM outlast_assistants
WHERE assistant_id = :assistant_id AND (:principal IS NULL OR principal = :principal);

-- name: a_next_version
-- The next version number of an assistant.
SELECT COALESCE(max(version), 0) + 1 AS version
FROM outlast_assistant_versions WHERE assistant_id = :assistant_id;

-- name: a_update
-- Replace an assistant's fields as a new version.
UPDATE outlast_assistants
SET graph_id = :graph_id, name = :assistant_name, description = :description,
    config = :config, context = :context, metadata = :metadata,
    version = :version, updated_at = (SELECT now FROM outlast_clock)
WHERE assistant_id = :assistant_id AND (:principal IS NULL OR principal = :principal)
RETURNING *;

-- name: a_set_latest
-- Make one of an assistant's versions its current fields.
UPDATE outlast_assistants
SET (graph_id, name, description, config, context, metadata, version) = (
        SELECT v.graph_id, v.name, v.description, v.config, v.context, v.metadata, v.version
        FROM outlast_assistant_versions v
        WHERE v.assistant_id = outlast_assistants.assistant_id AND v.version = :version),
    updated_at = (SELECT now FROM outlast_clock)
WHERE assistant_id = :assistant_id AND (:principal IS NULL OR principal = :principal)
  AND EXISTS (SELECT 1 FROM outlast_assistant_versions v
              WHERE v.assistant_id = :assistant_id AND v.version = :version)
RETURNING *;

-- name: a_delete
-- Delete a principal's assistant (its versions go with it).
DELETE FROM outlast_assistants
WHERE assistant_id = :assistant_id AND (:principal IS NULL OR principal = :principal)
RETURNING assistant_id;

-- name: a_search
-- A page of a principal's assistants, filtered and sorted as asked.
SELECT * FROM outlast_assistants a
WHERE (:principal IS NULL OR a.principal = :principal)
  AND (:graph_id IS NULL OR a.graph_id = :graph_id)
  AND (:assistant_name IS NULL OR instr(lower(a.name), lower(:assistant_name)) > 0)
  AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(:metadata, '{}')) f
                  WHERE NOT EXISTS (SELECT 1 FROM json_each(a.metadata) m
                                    WHERE m.key = f.key AND m.type = f.type
                                      AND m.value IS f.value))
ORDER BY
    CASE WHEN NOT :desc THEN
        CASE :sort_by WHEN 'assistant_id' THEN a.assistant_id
                      WHEN 'graph_id' THEN a.graph_id
                      WHEN 'name' THEN a.name END END ASC,
    CASE WHEN NOT :desc THEN
        CASE :sort_by WHEN 'created_at' THEN a.created_at
                      WHEN 'updated_at' THEN a.updated_at END END ASC,
    CASE WHEN :desc THEN
        CASE :sort_by WHEN 'assistant_id' THEN a.assistant_id
                      WHEN 'graph_id' THEN a.graph_id
                      WHEN 'name' THEN a.name END END DESC,
    CASE WHEN :desc THEN
        CASE :sort_by WHEN 'created_at' THEN a.created_at
                      WHEN 'updated_at' THEN a.updated_at END END DESC,
    a.assistant_id ASC
LIMIT :limit OFFSET :offset;

-- name: a_count
-- How many of a principal's assistants match a search.
SELECT count(*) AS n FROM outlast_assistants a
WHERE (:principal IS NULL OR a.principal = :principal)
  AND (:graph_id IS NULL OR a.graph_id = :graph_id)
  AND (:assistant_name IS NULL OR instr(lower(a.name), lower(:assistant_name)) > 0)
  AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(:metadata, '{}')) f
                  WHERE NOT EXISTS (SELECT 1 FROM json_each(a.metadata) m
                                    WHERE m.key = f.key AND m.type = f.type
                                      AND m.value IS f.value));

-- name: a_versions
-- A page of an assistant's versions, newest first, filtered by metadata.
SELECT v.* FROM outlast_assistant_versions v
JOIN outlast_assistants a ON a.assistant_id = v.assistant_id
WHERE v.assistant_id = :assistant_id AND (:principal IS NULL OR a.principal = :principal)
  AND NOT EXISTS (SELECT 1 FROM json_each(COALESCE(:metadata, '{}')) f
                  WHERE NOT EXISTS (SELECT 1 FROM json_each(v.metadata) m
                                    WHERE m.key = f.key AND m.type = f.type
                                      AND m.value IS f.value))
ORDER BY v.version DESC
LIMIT :limit OFFSET :offset;
