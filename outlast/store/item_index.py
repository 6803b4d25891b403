"""Semantic search over items (``store.index``), ranked in Python.

LangGraph's stores search by vector with a database extension: pgvector on Postgres,
sqlite-vec on SQLite. Where the extension is missing (this Python's ``sqlite3`` cannot
load extensions; a Postgres server without pgvector), ``RankedIndex`` stands in front of
LangGraph's store: a put embeds the item's ``fields`` and writes the vectors to
``store_item_vectors`` in the put's own transaction (the same cursor); a search with a
``query`` reads the items LangGraph's store finds for the namespace and the filter, the
vectors of those items, and ranks them by cosine similarity (an item's score is its best
field's, as in LangGraph's stores; items without vectors are not ranked, as there).
Every item under the prefix is read for each ranked search: fine for thousands of items;
for more, install pgvector (``item_backends.py`` then uses LangGraph's own search).
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.embeddings import Embeddings
from langgraph.store.base import GetOp, PutOp, Result, SearchItem, SearchOp
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from outlast.store.options import ItemIndex

PAGE = 1000  # items read at once while ranking


@dataclass(frozen=True, slots=True)
class Ranker:
    """An index configuration made ready: the embeddings and the tokenized fields."""

    embeddings: Embeddings
    dims: int
    fields: tuple[tuple[str, str | list[str]], ...]

    @classmethod
    def of(cls, index: ItemIndex) -> Ranker:
        fields = tuple((f, "$" if f == "$" else tokenize_path(f)) for f in index.fields)
        return cls(ensure_embeddings(index.embed), index.dims, fields)

    def texts(self, op: PutOp) -> list[tuple[str, str]]:
        """``(field name, text)`` to embed for a put; none for a delete or ``index=False``."""
        if op.value is None or op.index is False:
            return []
        paths = self.fields if op.index is None else tuple((f, tokenize_path(f)) for f in op.index)
        out: list[tuple[str, str]] = []
        for name, path in paths:
            found = get_text_at_path(op.value, path)
            out += [(f"{name}.{i}" if len(found) > 1 else name, t) for i, t in enumerate(found)]
        return out

    def packed(self, vector: Sequence[float]) -> bytes:
        if len(vector) != self.dims:
            raise ValueError(f"store.index: an embedding has {len(vector)} dims, not {self.dims}")
        return array("f", vector).tobytes()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def _unpacked(blob: bytes) -> array[float]:
    vector = array("f")
    vector.frombytes(bytes(blob))
    return vector


def _cols(row: Any) -> tuple[Any, ...]:
    # psycopg's store cursor makes dicts, aiosqlite's rows are sequences
    return tuple(row.values()) if isinstance(row, dict) else tuple(row)


class RankedIndex:
    """Put before LangGraph's ``AsyncPostgresStore`` or ``AsyncSqliteStore`` in a class's
    bases; it overrides their per-batch hooks (``_batch_put_ops``, ``_batch_search_ops``),
    which run on the batch's cursor. ``ranker`` None: LangGraph's behaviour unchanged."""

    ranker: Ranker | None = None
    vector_sql: dict[str, str]  # the dialect's statements (queries_items.sql)
    lists_as_json = False

    async def _batch_put_ops(self, put_ops: Sequence[tuple[int, PutOp]], cur: Any) -> None:
        await super()._batch_put_ops(put_ops, cur)  # type: ignore[misc]
        if self.ranker is not None:
            await self._write_vectors([op for _, op in put_ops], cur)

    async def _write_vectors(self, ops: list[PutOp], cur: Any) -> None:
        assert self.ranker is not None
        rows: list[tuple[str, str, str, str]] = []
        for op in ops:
            prefix = ".".join(op.namespace)
            await cur.execute(self.vector_sql["vectors_drop"], {"prefix": prefix, "key": op.key})
            rows += [(prefix, op.key, name, text) for name, text in self.ranker.texts(op)]
        if not rows:
            return
        vectors = await self.ranker.embeddings.aembed_documents([r[3] for r in rows])
        for (prefix, key, name, _), vector in zip(rows, vectors, strict=True):
            await cur.execute(
                self.vector_sql["vectors_put"],
                {
                    "prefix": prefix,
                    "key": key,
                    "field": name,
                    "embedding": self.ranker.packed(vector),
                },
            )

    async def _batch_search_ops(
        self, search_ops: Sequence[tuple[int, SearchOp]], results: list[Result], cur: Any
    ) -> None:
        plain = [(i, op) for i, op in search_ops if self.ranker is None or not op.query]
        if plain:
            await super()._batch_search_ops(plain, results, cur)  # type: ignore[misc]
        for i, op in search_ops:
            if self.ranker is not None and op.query:
                results[i] = await self._ranked(op, cur)

    async def _ranked(self, op: SearchOp, cur: Any) -> list[SearchItem]:
        assert self.ranker is not None and op.query
        candidates = await self._candidates(op, cur)
        query = await self.ranker.embeddings.aembed_query(op.query)
        best: dict[tuple[str, str], float] = {}
        for start in range(0, len(candidates), PAGE):
            page = candidates[start : start + PAGE]
            await cur.execute(self.vector_sql["vectors_of"], self._pairs(page))
            for prefix, key, blob in map(_cols, await cur.fetchall()):
                score = cosine(query, _unpacked(blob))
                best[(prefix, key)] = max(score, best.get((prefix, key), -math.inf))
        scored = [
            _with_score(item, best[(".".join(item.namespace), item.key)])
            for item in candidates
            if (".".join(item.namespace), item.key) in best
        ]
        scored.sort(key=lambda item: -(item.score or 0.0))
        found = scored[op.offset : op.offset + op.limit]
        if op.refresh_ttl and found:
            gets = [(n, GetOp(item.namespace, item.key, True)) for n, item in enumerate(found)]
            await super()._batch_get_ops(gets, [None] * len(gets), cur)  # type: ignore[misc]
        return found

    async def _candidates(self, op: SearchOp, cur: Any) -> list[SearchItem]:
        """Every item LangGraph's search finds for the prefix and the filter."""
        found: list[SearchItem] = []
        while True:
            page: list[Result] = [None]
            probe = op._replace(query=None, limit=PAGE, offset=len(found), refresh_ttl=False)
            await super()._batch_search_ops([(0, probe)], page, cur)  # type: ignore[misc]
            got = cast(list[SearchItem], page[0])
            found += got
            if len(got) < PAGE:
                return found

    def _pairs(self, items: list[SearchItem]) -> dict[str, Any]:
        pairs = [[".".join(item.namespace), item.key] for item in items]
        if self.lists_as_json:  # SQLite binds no arrays: json_each reads them
            return {"pairs": json.dumps(pairs)}
        return {"prefixes": [p for p, _ in pairs], "keys": [k for _, k in pairs]}


def _with_score(item: SearchItem, score: float) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)
