"""The connection pool of a Postgres store, with a check that costs nothing under load.

A connection that died with the server (a restart, a failover, an idle timeout on a
proxy) should be found at checkout and replaced, not fail the first statement after it.
psycopg_pool's ``check_connection`` does that with an empty query: a round trip on every
checkout. A run checks a connection out for every checkpoint write, event batch and lease
renewal, so that was about 40 extra round trips (and transactions on the server) per run
of a 10-node graph, the third of all its statements (bench/profile.py).

Here a connection is checked only if its previous checkout is older than
``CHECK_AFTER_IDLE``: under load a connection comes back within milliseconds, having just
completed a statement, so it is as alive as a check would show. (The time is taken at
checkout, not at return: a ``reset`` callback would stamp the return, but psycopg_pool
then returns every connection through a background task, which costs more than the
check saved.) A connection held for longer than that is checked once more, harmlessly.

A server that goes away within that window fails the next statement instead; every
caller already handles that (a worker requeues the run from its checkpoint, the API
answers 503 and the client retries), and the pool discards the broken connection when
it comes back.

Callers queue at a semaphore in front of the pool, not in the pool. With more runs in
flight than connections (50 runs of the 10-node graph on 20 connections), every checkout
of psycopg_pool's that must wait wraps its wait in ``asyncio.wait_for``: a task, a
condition and a lock per wait, and a waiter that is woken may find the connection taken.
That was 7% of a busy server's samples at 50 in flight against 3.5% at 10, half of what a
run cost more at the higher load. A semaphore waiter is one future, woken in order, and
it is let through only when a connection is back in the pool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from outlast.store.pg_conninfo import DEAD_PEER_TIMEOUT, bounded

Conn = psycopg.AsyncConnection[dict[str, Any]]

CHECK_AFTER_IDLE = 1.0  # seconds in the pool before a checkout pings the server


class IdleCheck:
    """The pool's ``check`` callback: pings only connections not checked out lately."""

    def __init__(self, after_idle: float = CHECK_AFTER_IDLE) -> None:
        self.after_idle = after_idle
        self._used: WeakKeyDictionary[Conn, float] = WeakKeyDictionary()
        self.pings = 0  # for tests: how many checkouts paid a round trip

    async def check(self, conn: Conn) -> None:
        if conn.broken or conn.closed:
            raise psycopg.OperationalError("the connection is closed")
        now = time.monotonic()
        used, self._used[conn] = self._used.get(conn), now
        if used is not None and now - used < self.after_idle:
            return
        self.pings += 1
        await AsyncConnectionPool.check_connection(conn)


@asynccontextmanager
async def pipeline(conn: psycopg.AsyncConnection[Any]) -> AsyncIterator[None]:
    """``conn.pipeline()``, and the connection closed when the server refused a
    statement in it, so the pool replaces it.

    Why: psycopg (3.3.9) prepares a statement the time it reaches its prepare threshold;
    when that happens inside a pipeline the server aborted (an earlier statement failed:
    a refused fence, say), the server skips the ``Parse`` but psycopg records the
    statement as prepared, and every later use of it on that connection fails with
    "prepared statement does not exist" (``tests/test_pg_pipeline.py``). The nemesis
    found runs failed so after workers lost leases. A closed connection is cheap to
    replace; a server error in a pipeline is rare."""
    try:
        async with conn.pipeline():
            yield
    except psycopg.Error as exc:
        if exc.sqlstate is not None and not conn.closed:
            await conn.close()
        raise


class GatedPool(AsyncConnectionPool[Conn]):
    """At most ``max_size`` checkouts reach the pool; the others wait at the gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gate = asyncio.Semaphore(self.max_size)

    # psycopg_pool's own signature, timeout included
    async def getconn(self, timeout: float | None = None) -> Conn:  # noqa: ASYNC109
        limit = self.timeout if timeout is None else timeout
        if self._gate.locked():  # the fast path takes a permit without a timer
            start = time.monotonic()
            try:
                async with asyncio.timeout(limit):
                    await self._gate.acquire()
            except TimeoutError:
                raise PoolTimeout(f"couldn't get a connection after {limit:.2f} sec") from None
            limit = max(0.0, limit - (time.monotonic() - start))
        else:
            await self._gate.acquire()
        try:
            return await super().getconn(limit)
        except BaseException:
            self._gate.release()
            raise

    async def putconn(self, conn: Conn) -> None:
        try:
            await super().putconn(conn)
        finally:
            self._gate.release()


def make_pool(
    url: str,
    *,
    min_size: int,
    max_size: int,
    idle: IdleCheck | None = None,
    dead_peer_timeout: float = DEAD_PEER_TIMEOUT,
) -> AsyncConnectionPool[Conn]:
    """Autocommit connections with dict rows (what AsyncPostgresSaver needs too, so the
    checkpointer shares this pool), checked at checkout when stale, and whose statements
    fail within ``dead_peer_timeout`` of the link going dead (``pg_conninfo.py``)."""
    idle = idle or IdleCheck()
    return GatedPool(
        bounded(url, dead_peer_timeout),
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True, "row_factory": dict_row},
        check=idle.check,
        open=False,
        name="outlast",
    )
