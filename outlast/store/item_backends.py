"""The item store each backend opens: LangGraph's own ``AsyncPostgresStore`` and
``AsyncSqliteStore``, configured by ``langgraph.json``'s ``store`` section
(``StoreOptions``), with what outlast adds to them:

- **Semantic search where the database has no vector extension** (``item_index.py``):
  always on SQLite (this Python's ``sqlite3`` cannot load sqlite-vec), on Postgres when
  the server lacks pgvector; with pgvector, LangGraph's own index and search.
- **Expired items are never read.** LangGraph's Postgres store leaves them out of reads
  (``omit_expired``); its SQLite store reads them until its sweep, so there a read first
  deletes what has expired (one process, one writer: a statement on the partial index of
  expiries, where LangGraph's reads already write their TTL refreshes).
- **One sweep per interval across processes.** LangGraph's stores sweep from a task of
  their own in every process that opens them; here the retention loop sweeps
  (``sweep``), when the store's lease row says the sweep is due (``store/sweeps.py``).
- **A call's ``refresh_ttl`` is honoured whatever the deployment's ``refresh_on_read``**:
  that setting decides what a read without ``refresh_ttl`` does, which ``PrincipalStore``
  resolves (``reads_refresh``) before the op reaches LangGraph's store, told to honour
  every op's flag (LangGraph's SQLite store otherwise ignores an explicit ``True``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.store.base import BaseStore, Op, PutOp, Result, TTLConfig
from langgraph.store.postgres.aio import AsyncPostgresStore
from langgraph.store.postgres.base import PostgresIndexConfig
from langgraph.store.sqlite.aio import AsyncSqliteStore
from psycopg_pool import AsyncConnectionPool

from outlast.store.item_index import RankedIndex, Ranker
from outlast.store.options import StoreOptions
from outlast.store.pg_pool import Conn
from outlast.store.sqlfiles import queries
from outlast.store.sqlite_errors import mapped


def ttl_config(options: StoreOptions) -> TTLConfig:
    """What LangGraph's store is given: it honours each op's ``refresh_ttl`` (resolved
    from ``refresh_on_read`` by ``PrincipalStore``) and leaves expired items out."""
    ttl = options.item_ttl
    return {
        "default_ttl": ttl.default_minutes,
        "refresh_on_read": True,
        "omit_expired": True,
        "sweep_interval_minutes": None,  # the retention loop sweeps
    }


class PostgresItems(RankedIndex, AsyncPostgresStore):
    reads_refresh = True


class SqliteItems(RankedIndex, AsyncSqliteStore):
    reads_refresh = True
    lists_as_json = True
    path = Path("checkpoints.db")  # its file, named by a full disk's error

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        given = list(ops)
        with mapped(self.path):  # a full disk: StoreFull, as the run store's writes
            if any(not isinstance(op, PutOp) for op in given):
                async with self._cursor() as cur:
                    await cur.execute(self.vector_sql["items_expired"])
            return await super().abatch(given)


def _pg_index(options: StoreOptions) -> PostgresIndexConfig | None:
    index = options.index
    if index is None:
        return None
    return {"dims": index.dims, "embed": index.embed, "fields": list(index.fields)}


async def _has_pgvector(pool: AsyncConnectionPool[Conn]) -> bool:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT 1 AS ok FROM pg_available_extensions WHERE name = 'vector'"
        )
        return bool(await cur.fetchall())


async def open_postgres(pool: AsyncConnectionPool[Conn], options: StoreOptions) -> BaseStore:
    """Over the run store's pool: its connections are autocommit with dict rows, what
    ``AsyncPostgresStore`` expects of a pool, and items need no connections of their own.
    Its ``setup()`` is not safe to run concurrently (``CREATE TABLE IF NOT EXISTS`` and
    version inserts race), so ``PostgresStore.migrate`` runs it under its advisory lock."""
    native = options.index is not None and await _has_pgvector(pool)
    index = _pg_index(options) if native else None
    items = PostgresItems(pool, ttl=ttl_config(options), index=index)
    _configure(items, options, "postgres", ranked=options.index is not None and not native)
    return items


async def open_sqlite(conn: aiosqlite.Connection, options: StoreOptions, path: Path) -> BaseStore:
    """On a connection of its own (autocommit: ``AsyncSqliteStore`` issues its own
    ``BEGIN``/``COMMIT``) to the checkpoints file, not the run store's: items are
    LangGraph's data, like checkpoints, and are written while a node runs, when the run
    store's file is busiest with event appends while the checkpoints file is idle until
    the step ends. No transaction ever needs items and run rows together."""
    items = SqliteItems(conn, ttl=ttl_config(options))
    items.path = path
    _configure(items, options, "sqlite", ranked=options.index is not None)
    return items


def _configure(items: RankedIndex, options: StoreOptions, backend: str, *, ranked: bool) -> None:
    items.vector_sql = queries(backend)
    items.reads_refresh = options.item_ttl.refresh_on_read  # type: ignore[attr-defined]
    if ranked and options.index is not None:
        items.ranker = Ranker.of(options.index)


async def setup(items: BaseStore) -> None:
    """Create or upgrade the item tables: LangGraph's (``store``, ``store_migrations``,
    and with pgvector its vectors) and outlast's ``store_item_vectors``."""
    if isinstance(items, AsyncPostgresStore):
        await items.setup()
        async with items._cursor() as cur:
            await cur.execute(queries("postgres")["vectors_setup"])
    elif isinstance(items, AsyncSqliteStore):
        await items.setup()
        await items.conn.executescript(queries("sqlite")["vectors_setup"])


async def sweep(items: BaseStore) -> int:
    """Delete expired items (and vectors left without their item); how many items."""
    if not isinstance(items, PostgresItems | SqliteItems):
        return 0
    deleted = await items.sweep_ttl()
    if items.ranker is not None:
        async with items._cursor() as cur:
            await cur.execute(items.vector_sql["vectors_orphaned"])
    return int(deleted)


async def close(items: BaseStore) -> None:
    if isinstance(items, AsyncPostgresStore | AsyncSqliteStore):
        # The batching task AsyncBatchedBaseStore starts in its constructor.
        task: asyncio.Task[None] | None = getattr(items, "_task", None)
        if task is not None:
            task.cancel()
    if isinstance(items, AsyncSqliteStore):
        await items.conn.close()


def public_ttl(items: BaseStore) -> tuple[bool, TTLConfig | None]:
    """``(supports_ttl, ttl_config)`` as a principal's view shows them: the deployment's
    ``refresh_on_read``, which decides a read that does not say."""
    config: dict[str, Any] | None = dict(items.ttl_config) if items.ttl_config else None
    if config is not None:
        config["refresh_on_read"] = getattr(items, "reads_refresh", True)
    supports = items.supports_ttl or items.ttl_config is not None
    return supports, config  # type: ignore[return-value]
