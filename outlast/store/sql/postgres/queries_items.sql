-- The item store's own statements (store/item_index.py, store/item_backends.py), run on
-- LangGraph's item store cursor, beside its `store` table. Not migrations: the item
-- store's tables are made by its setup, where the items live (LangGraph's own `store`
-- table is made by LangGraph's setup the same way).

-- name: vectors_setup
-- Vectors of items for semantic search without pgvector: one per indexed field (a field
-- with several texts: `field.0`, `field.1`, …), float32, little-endian.
CREATE TABLE IF NOT EXISTS store_item_vectors (
    prefix     text NOT NULL,
    key        text NOT NULL,
    field_name text NOT NULL,
    embedding  bytea NOT NULL,
    PRIMARY KEY (prefix, key, field_name)
);

-- name: vectors_drop
-- An item's vectors, before a put writes its new ones (or deletes it).
DELETE FROM store_item_vectors WHERE prefix = %(prefix)s AND key = %(key)s;

-- name: vectors_put
-- One field's vector.
INSERT INTO store_item_vectors (prefix, key, field_name, embedding)
VALUES (%(prefix)s, %(key)s, %(field)s, %(embedding)s)
ON CONFLICT (prefix, key, field_name) DO UPDATE SET embedding = EXCLUDED.embedding;

-- name: vectors_of
-- The vectors of the given items.
SELECT v.prefix, v.key, v.embedding
FROM store_item_vectors v
JOIN unnest(%(prefixes)s::text[], %(keys)s::text[]) AS c (prefix, key)
  ON v.prefix = c.prefix AND v.key = c.key;

-- name: vectors_orphaned
-- Vectors whose item is gone (swept, deleted).
DELETE FROM store_item_vectors v
WHERE NOT EXISTS (SELECT 1 FROM store s WHERE s.prefix = v.prefix AND s.key = v.key);
