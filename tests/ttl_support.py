"""What the TTL tests share: stores opened with ``langgraph.json``'s options, the clock
moved forward for some rows (their times moved back: the database's clock is not a test's
to set, and no test sleeps to pass), raw reads of what expires, and a deterministic
embedding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from outlast.store import Store
from outlast.store.options import ItemIndex, ItemTTL, StoreOptions, ThreadTTL
from outlast.store.postgres import PostgresStore
from outlast.store.sqlite import SqliteStore
from tests.harness import open_pg, open_sqlite

LETTERS = "abc"


def embed(texts: list[str]) -> list[list[float]]:
    """A text's vector: how many a, b and c it has (so "aab" is nearer "a" than "bbb")."""
    return [[float(t.count(c)) for c in LETTERS] for t in texts]


OPTIONS = StoreOptions(
    item_ttl=ItemTTL(default_minutes=10, refresh_on_read=True, sweep_minutes=1),
    index=ItemIndex(dims=len(LETTERS), embed=embed, fields=("text",)),
    thread_ttl=ThreadTTL(default_minutes=60, sweep_minutes=1),
)


@asynccontextmanager
async def opened(
    backend: str,
    request: pytest.FixtureRequest,
    folder: Path,
    options: StoreOptions = OPTIONS,
    *,
    truncate: bool = True,
) -> AsyncIterator[Store]:
    store: Store
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        store = await open_pg(url, options=options, truncate=truncate)
    else:
        store = await open_sqlite(folder, options=options)
    try:
        yield store
    finally:
        await store.close()


async def _sqlite(path: Path, sql: str, *params: Any) -> list[Any]:
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        cur = await conn.execute(sql, params)
        rows = list(await cur.fetchall())
        await cur.close()
        return rows


async def _pg(store: PostgresStore, sql: str, *params: Any) -> list[Any]:
    async with store.pool.connection() as conn:
        cur = await conn.execute(sql, params)
        return list(await cur.fetchall()) if cur.description else []


async def age_items(store: Store, seconds: float) -> None:
    """As if ``seconds`` had passed for every item's expiry."""
    if isinstance(store, PostgresStore):
        await _pg(
            store, "UPDATE store SET expires_at = expires_at - make_interval(secs => %s)", seconds
        )
    else:
        assert isinstance(store, SqliteStore)
        await _sqlite(
            store.checkpoint_path,
            "UPDATE store SET expires_at = DATETIME(expires_at, ?) WHERE expires_at IS NOT NULL",
            f"-{seconds} seconds",
        )


async def expiry(store: Store, key: str) -> tuple[float | None, float | None] | None:
    """``(expires_at in seconds, ttl_minutes)`` of the item ``key``; None if no row."""
    if isinstance(store, PostgresStore):
        rows = await _pg(
            store,
            "SELECT extract(epoch FROM expires_at)::float8 AS e, ttl_minutes AS t"
            " FROM store WHERE key = %s",
            key,
        )
        return (rows[0]["e"], rows[0]["t"]) if rows else None
    assert isinstance(store, SqliteStore)
    rows = await _sqlite(
        store.checkpoint_path,
        "SELECT (julianday(expires_at) - 2440587.5) * 86400.0, ttl_minutes FROM store"
        " WHERE key = ?",
        key,
    )
    return (rows[0][0], rows[0][1]) if rows else None


async def vectors(store: Store) -> int:
    sql = "SELECT count(*) AS n FROM store_item_vectors"
    if isinstance(store, PostgresStore):
        return int((await _pg(store, sql))[0]["n"])
    assert isinstance(store, SqliteStore)
    return int((await _sqlite(store.checkpoint_path, sql))[0][0])


THREAD_TIMES = (
    ("outlast_threads", "updated_at"),
    ("outlast_threads", "pruned_at"),
    ("outlast_runs", "updated_at"),
)


async def age_threads(store: Store, seconds: float) -> None:
    """As if ``seconds`` had passed since every thread and run was last updated (and
    since keep_latest last pruned a thread)."""
    if isinstance(store, PostgresStore):
        for table, column in THREAD_TIMES:
            await _pg(
                store,
                f"UPDATE {table} SET {column} = {column} - make_interval(secs => %s)",
                seconds,
            )
    else:
        assert isinstance(store, SqliteStore)
        for table, column in THREAD_TIMES:
            await _sqlite(store.path, f"UPDATE {table} SET {column} = {column} - ?", seconds)


async def thread_ttl(store: Store, thread_id: str) -> float | None:
    threads = await store.lg_threads(thread_id=thread_id)
    assert threads, thread_id
    return threads[0].ttl_minutes


async def checkpoints(store: Store, thread_id: str) -> dict[str, int]:
    """How many checkpoints the thread has, by namespace (LangGraph's savers' tables)."""
    sql = "SELECT checkpoint_ns, count(*) AS n FROM checkpoints WHERE thread_id = {} GROUP BY 1"
    if isinstance(store, PostgresStore):
        return {r["checkpoint_ns"]: r["n"] for r in await _pg(store, sql.format("%s"), thread_id)}
    assert isinstance(store, SqliteStore)
    rows = await _sqlite(store.checkpoint_path, sql.format("?"), thread_id)
    return {r[0]: r[1] for r in rows}
