"""The Postgres checkpointer, fenced by the run's lease and free of the global lock.

Two changes to ``AsyncPostgresSaver``, both in ``_cursor``, the one place it opens
connections:

- No instance lock. Upstream takes one ``asyncio.Lock`` around every cursor, even on a
  pool (langgraph#7259), which would serialize the checkpoint I/O of every run sharing
  a saver. Each run gets its own saver here, and each cursor its own pool connection.
- Fenced writes. Every write (the saver asks for ``pipeline=True`` exactly for its
  writes) runs in a transaction that first locks the run row ``FOR KEY SHARE`` and checks
  the worker and epoch of the lease. A worker presumed dead that wakes up again cannot
  add a checkpoint to a thread another worker now owns: the reaper selects expired runs
  ``FOR UPDATE SKIP LOCKED``, which skips a run while a checkpoint of its holder is in
  flight, and any later write of the old holder is refused. ``KEY SHARE`` (not ``SHARE``)
  so that the holder's own event appends, which update ``last_seq``, never wait for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from outlast.errors import LeaseLost
from outlast.store.base import Lease

_FENCE = (
    "SELECT 1 FROM outlast_runs WHERE id = %s AND worker_id = %s AND lease_epoch = %s"
    " AND status IN ('running', 'cancelling') FOR KEY SHARE"
)


class FencedPostgresSaver(AsyncPostgresSaver):
    def __init__(self, pool: AsyncConnectionPool[Any], lease: Lease | None) -> None:
        super().__init__(pool)
        self.pool = pool
        self.lease = lease

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        async with self.pool.connection() as conn:
            if not pipeline:
                async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
                return
            # One round trip: the fence, the saver's writes and the commit go out as one
            # pipeline. The fence's answer is read last; if the lease is gone, raising
            # inside the transaction rolls every write back.
            async with (
                conn.transaction(),
                conn.pipeline(),
                conn.cursor(row_factory=dict_row) as fence,
                conn.cursor(binary=True, row_factory=dict_row) as cur,
            ):
                lease = self.lease
                if lease is not None:
                    await fence.execute(_FENCE, (lease.run_id, lease.worker_id, lease.epoch))
                yield cur
                if lease is not None and await fence.fetchone() is None:
                    raise LeaseLost(
                        f"run {lease.run_id}: checkpoint refused, lease epoch "
                        f"{lease.epoch} is no longer held"
                    )
