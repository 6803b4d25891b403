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
"""

from __future__ import annotations

import time
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

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


def make_pool(
    url: str, *, min_size: int, max_size: int, idle: IdleCheck | None = None
) -> AsyncConnectionPool[Conn]:
    """Autocommit connections with dict rows (what AsyncPostgresSaver needs too, so the
    checkpointer shares this pool), checked at checkout when stale."""
    idle = idle or IdleCheck()
    return AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True, "row_factory": dict_row},
        check=idle.check,
        open=False,
        name="outlast",
    )
