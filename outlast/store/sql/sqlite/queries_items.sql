-- The item store's own statements, on the checkpoints file where the items live; see the
-- Postgres file.

-- name: vectors_setup
-- Vectors of items for semantic search (this Python's sqlite3 loads no sqlite-vec).
CREATE TABLE IF NOT EXISTS store_item_vectors (
    prefix     TEXT NOT NULL,
    key        TEXT NOT NULL,
    field_name TEXT NOT NULL,
    embedding  BLOB NOT NULL,
    PRIMARY KEY (prefix, key, field_name)
);

-- name: vectors_drop
-- An item's vectors, before a put writes its new ones (or deletes it).
DELETE FROM store_item_vectors WHERE prefix = :prefix AND key = :key;

-- name: vectors_put
-- One field's vector.
INSERT INTO store_item_vectors (prefix, key, field_name, embedding)
VALUES (:prefix, :key, :field, :embedding)
ON CONFLICT (prefix, key, field_name) DO UPDATE SET embedding = excluded.embedding;

-- name: vectors_of
-- The vectors of the given items (`pairs`: a JSON array of [prefix, key]).
SELECT v.prefix, v.key, v.embedding
FROM json_each(:pairs) c
JOIN store_item_vectors v
  ON v.prefix = json_extract(c.value, '$[0]') AND v.key = json_extract(c.value, '$[1]');

-- name: vectors_orphaned
-- Vectors whose item is gone (swept, deleted).
DELETE FROM store_item_vectors
WHERE NOT EXISTS (SELECT 1 FROM store s
                  WHERE s.prefix = store_item_vectors.prefix
                    AND s.key = store_item_vectors.key);

-- name: items_expired
-- Expired items, deleted before a read so that none is seen (LangGraph's SQLite store
-- reads them until its sweep). Its timestamps are UTC text.
DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at < CURRENT_TIMESTAMP;
