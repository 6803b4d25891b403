"""The pool pings a connection at checkout only when it sat idle, and still replaces
one that died while idle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from outlast.store.pg_pool import Conn, IdleCheck, make_pool


@pytest.fixture
async def opened(request: pytest.FixtureRequest, pg_url: str) -> AsyncIterator[Any]:
    async def open_with(idle: IdleCheck) -> AsyncConnectionPool[Conn]:
        pool = make_pool(pg_url, min_size=1, max_size=1, idle=idle)
        await pool.open(wait=True)
        pools.append(pool)
        return pool

    pools: list[AsyncConnectionPool[Conn]] = []
    yield open_with
    for pool in pools:
        await pool.close()


async def _backend_pid(pool: AsyncConnectionPool[Conn]) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT pg_backend_pid() AS pid")
        row = await cur.fetchone()
    assert row is not None
    return int(row["pid"])


async def test_a_connection_back_a_moment_ago_is_not_pinged(opened: Any) -> None:
    idle = IdleCheck(after_idle=3600)
    pool = await opened(idle)
    await _backend_pid(pool)  # the first checkout of a new connection pings it
    first = idle.pings
    for _ in range(20):
        await _backend_pid(pool)
    assert idle.pings == first  # 20 checkouts, not one round trip among them


async def test_a_stale_connection_is_pinged_and_replaced_when_dead(
    opened: Any, pg_url: str
) -> None:
    idle = IdleCheck(after_idle=0.0)  # every connection counts as stale
    pool = await opened(idle)
    pid = await _backend_pid(pool)
    before = idle.pings
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    # the check finds the terminated connection, the pool replaces it, and the caller
    # gets a live one: no error reaches it
    assert await _backend_pid(pool) != pid
    assert idle.pings > before
