"""The pool pings a connection at checkout only when it sat idle, and still replaces
one that died while idle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from outlast.store.pg_pool import Conn, IdleCheck, make_pool
from tests.harness import eventually


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


async def test_checkouts_beyond_the_pool_wait_at_the_gate_not_in_the_pool(pg_url: str) -> None:
    """More callers than connections: none of them waits inside psycopg_pool (whose
    waits cost a task each), every one gets a connection, and the pool never grows
    past its size."""
    pool = make_pool(pg_url, min_size=2, max_size=2)
    await pool.open(wait=True)
    held = asyncio.Event()
    inside: list[int] = []
    waiting_in_pool: list[int] = []

    async def one() -> None:
        async with pool.connection() as conn:
            inside.append(1)
            waiting_in_pool.append(pool.get_stats().get("requests_waiting", 0))
            await held.wait()
            await conn.execute("SELECT 1")
        inside.pop()

    try:
        tasks = [asyncio.create_task(one()) for _ in range(6)]
        await eventually(lambda: len(inside) == 2, what="two checkouts")
        await asyncio.sleep(0)  # the other four are parked by now, at the gate
        assert all(not t.done() for t in tasks)
        held.set()
        await asyncio.gather(*tasks)
        assert waiting_in_pool == [0] * 6
        assert pool.get_stats().get("requests_waiting", 0) == 0
        assert pool.get_stats()["pool_size"] == 2
    finally:
        await pool.close()


async def test_a_checkout_that_waits_too_long_at_the_gate_times_out(pg_url: str) -> None:
    pool = make_pool(pg_url, min_size=1, max_size=1)
    await pool.open(wait=True)
    try:
        async with pool.connection():
            with pytest.raises(PoolTimeout):
                async with pool.connection(timeout=0.2):
                    pass
        async with pool.connection(timeout=1) as conn:  # the failed wait gave its permit back
            await conn.execute("SELECT 1")
    finally:
        await pool.close()
