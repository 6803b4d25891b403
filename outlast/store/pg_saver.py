"""The Postgres checkpointer, fenced by the run's lease and free of the global lock.

Two changes to ``AsyncPostgresSaver``, both in ``_cursor``, the one place it opens
connections:

- No instance lock. Upstream takes one ``asyncio.Lock`` around every cursor, even on a
  pool (langgraph#7259), which would serialize the checkpoint I/O of every run sharing
  a saver. Each run gets its own saver here, and each cursor its own pool connection.
- Fenced writes. Every write (the saver asks for ``pipeline=True`` exactly for its
  writes) starts with ``outlast_fence()``, which locks the run row ``FOR KEY SHARE`` and
  fails unless this worker still holds the lease at this epoch. A worker presumed dead
  that wakes up again cannot add a checkpoint (or the pending writes a successor would
  take for finished tasks) to a thread another worker now owns: the reaper selects
  expired runs ``FOR UPDATE SKIP LOCKED``, which skips a run while a checkpoint of its
  holder is in flight, and any later write of the old holder is refused.

Why no BEGIN/COMMIT: in a pipeline every statement up to the Sync (psycopg sends one
when the pipeline block ends) runs in one implicit transaction, committed at the Sync
if all succeeded and rolled back whole if one failed; the server skips whatever follows
a failed statement. So the fence, the saver's writes and the commit leave in one round
trip with the fence's verdict decided on the server, as cheap as upstream's unfenced
write (about 400 µs of client CPU per write against 650 µs for the earlier version, a
transaction around the pipeline whose fence was read back before COMMIT: bench/profile.py
showed the checkpoint writes as the largest cost of a step). The saver's write methods
read no result inside the block, so no Sync splits the transaction.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from outlast.errors import LeaseLost
from outlast.store.base import EventDraft, EventLender, Lease

_FENCE = "SELECT outlast_fence(%s, %s, %s)"
_FENCE_REFUSED = "OL001"  # the SQLSTATE outlast_fence() raises (migration 0008)


# The store's fenced append: (statement, parameters) for a lease and a batch.
AppendStatement = Callable[[Lease, Sequence[EventDraft]], tuple[str, dict[str, Any]]]


class FencedPostgresSaver(AsyncPostgresSaver):
    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        lease: Lease | None,
        events: EventLender | None = None,
        append: AppendStatement | None = None,
    ) -> None:
        super().__init__(pool)
        self.pool = pool
        self.lease = lease
        self.events = events if lease is not None and append is not None else None
        self.append = append

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        async with self.pool.connection() as conn:
            if not pipeline:
                async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
                return
            lease = self.lease
            # The run's pending events ride along: one more statement in the same
            # implicit transaction, so they land with this write or not at all.
            batch = self.events.lend() if self.events is not None else None
            seq: int | None = None
            try:
                async with conn.cursor(row_factory=dict_row) as carried:
                    async with (
                        conn.pipeline(),
                        conn.cursor(binary=True, row_factory=dict_row) as cur,
                    ):
                        if lease is not None:
                            await cur.execute(_FENCE, (lease.run_id, lease.worker_id, lease.epoch))
                        if batch and lease is not None and self.append is not None:
                            await carried.execute(*self.append(lease, batch))
                        yield cur
                    if batch:  # the pipeline is synced: the append's row is here
                        row = await carried.fetchone()
                        seq = int(row["seq"]) if row is not None else None
            except psycopg.Error as exc:
                if lease is not None and exc.sqlstate == _FENCE_REFUSED:
                    raise LeaseLost(
                        f"run {lease.run_id}: checkpoint refused, lease epoch "
                        f"{lease.epoch} is no longer held"
                    ) from exc
                raise
            finally:
                if batch and self.events is not None:
                    self.events.settle(batch, seq)
