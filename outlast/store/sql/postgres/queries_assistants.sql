-- Named queries for the LangGraph face's user assistants (store/assistants.py).
-- Every statement names the principal: an assistant belongs to whoever created it.
-- Metadata filters are exact per top-level key (the same test on SQLite); text sorts use
-- the "C" collation, code point order, so the API can merge the stored rows with the
-- system assistants in Python and get the order the database would give.

-- name: a_insert
-- A new assistant, or nothing if its id exists.
INSERT INTO outlast_assistants (assistant_id, principal, graph_id, name, description,
                                config, context, metadata)
VALUES (%(assistant_id)s, %(principal)s, %(graph_id)s, %(assistant_name)s, %(description)s,
        %(config)s::jsonb, %(context)s::jsonb, %(metadata)s::jsonb)
ON CONFLICT (assistant_id) DO NOTHING
RETURNING *;

-- name: a_snapshot_version
-- The current fields become a version row; its time is the time they became current.
INSERT INTO outlast_assistant_versions (assistant_id, version, graph_id, name, description,
                                        config, context, metadata, created_at)
SELECT assistant_id, version, graph_id, name, description, config, context, metadata,
       updated_at
FROM outlast_assistants WHERE assistant_id = %(assistant_id)s;

-- name: a_owner
-- Who owns an assistant id.
SELECT principal FROM outlast_assistants WHERE assistant_id = %(assistant_id)s;

-- name: a_get
-- One assistant of a principal.
SELECT * FROM outlast_assistants
WHERE assistant_id = %(assistant_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s);

-- name: a_lock
-- One assistant of a principal, locked for an update.
SELECT * FROM outlast_assistants
WHERE assistant_id = %(assistant_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s)
FOR UPDATE;

-- name: a_next_version
-- The next version number of an assistant.
SELECT COALESCE(max(version), 0) + 1 AS version
FROM outlast_assistant_versions WHERE assistant_id = %(assistant_id)s;

-- name: a_update
-- Replace an assistant's fields as a new version.
UPDATE outlast_assistants
SET graph_id = %(graph_id)s, name = %(assistant_name)s, description = %(description)s,
    config = %(config)s::jsonb, context = %(context)s::jsonb, metadata = %(metadata)s::jsonb,
    version = %(version)s, updated_at = clock_timestamp()
WHERE assistant_id = %(assistant_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s)
RETURNING *;

-- name: a_set_latest
-- Make one of an assistant's versions its current fields.
UPDATE outlast_assistants a
SET graph_id = v.graph_id, name = v.name, description = v.description, config = v.config,
    context = v.context, metadata = v.metadata, version = v.version,
    updated_at = clock_timestamp()
FROM outlast_assistant_versions v
WHERE a.assistant_id = %(assistant_id)s AND (%(principal)s::text IS NULL OR a.principal = %(principal)s)
  AND v.assistant_id = a.assistant_id AND v.version = %(version)s
RETURNING a.*;

-- name: a_delete
-- Delete a principal's assistant (its versions go with it).
DELETE FROM outlast_assistants
WHERE assistant_id = %(assistant_id)s AND (%(principal)s::text IS NULL OR principal = %(principal)s)
RETURNING assistant_id;

-- name: a_search
-- A page of a principal's assistants, filtered and sorted as asked.
SELECT * FROM outlast_assistants a
WHERE (%(principal)s::text IS NULL OR a.principal = %(principal)s)
  AND (%(graph_id)s::text IS NULL OR a.graph_id = %(graph_id)s::text)
  AND (%(assistant_name)s::text IS NULL
       OR strpos(lower(a.name), lower(%(assistant_name)s::text)) > 0)
  AND NOT EXISTS (SELECT 1 FROM jsonb_each(COALESCE(%(metadata)s::jsonb, '{}'::jsonb)) f
                  WHERE a.metadata -> f.key IS DISTINCT FROM f.value)
ORDER BY
    CASE WHEN NOT %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'assistant_id' THEN a.assistant_id
                               WHEN 'graph_id' THEN a.graph_id
                               WHEN 'name' THEN a.name END END COLLATE "C" ASC,
    CASE WHEN NOT %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'created_at' THEN a.created_at
                               WHEN 'updated_at' THEN a.updated_at END END ASC,
    CASE WHEN %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'assistant_id' THEN a.assistant_id
                               WHEN 'graph_id' THEN a.graph_id
                               WHEN 'name' THEN a.name END END COLLATE "C" DESC,
    CASE WHEN %(desc)s::boolean THEN
        CASE %(sort_by)s::text WHEN 'created_at' THEN a.created_at
                               WHEN 'updated_at' THEN a.updated_at END END DESC,
    a.assistant_id COLLATE "C" ASC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: a_count
-- How many of a principal's assistants match a search.
SELECT count(*) AS n FROM outlast_assistants a
WHERE (%(principal)s::text IS NULL OR a.principal = %(principal)s)
  AND (%(graph_id)s::text IS NULL OR a.graph_id = %(graph_id)s::text)
  AND (%(assistant_name)s::text IS NULL
       OR strpos(lower(a.name), lower(%(assistant_name)s::text)) > 0)
  AND NOT EXISTS (SELECT 1 FROM jsonb_each(COALESCE(%(metadata)s::jsonb, '{}'::jsonb)) f
                  WHERE a.metadata -> f.key IS DISTINCT FROM f.value);

-- name: a_versions
-- A page of an assistant's versions, newest first, filtered by metadata.
SELECT v.* FROM outlast_assistant_versions v
JOIN outlast_assistants a ON a.assistant_id = v.assistant_id
WHERE v.assistant_id = %(assistant_id)s AND (%(principal)s::text IS NULL OR a.principal = %(principal)s)
  AND NOT EXISTS (SELECT 1 FROM jsonb_each(COALESCE(%(metadata)s::jsonb, '{}'::jsonb)) f
                  WHERE v.metadata -> f.key IS DISTINCT FROM f.value)
ORDER BY v.version DESC
LIMIT %(limit)s OFFSET %(offset)s;
