"""Stopping a task for good: cancel it until it has ended.

One ``cancel()`` is a request, and a request can be lost. On Python 3.11,
``asyncio.wait_for`` returns its inner result and drops the cancellation when the two
arrive in the same turn of the loop (3.12 rewrote it on ``asyncio.timeout``), and psycopg
and psycopg_pool wait for connections and results that way. A Postgres restart is when
both arrive together: every waiter's connection fails at once while runs are closing.

The nemesis found what a lost cancel costs: a run's activity loop, cancelled while its
write waited for a connection, went on looping; the execution's closing awaited it
forever, and the worker's heartbeat renewed the lease of a run that would never end
(stuck, not lost to the reaper, which only takes runs whose lease lapsed). So every
"cancel, then await" of a loop that touches the database goes through here.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Long enough for a task to run the cleanup its cancellation starts (a rollback, a
# connection returned); short next to any lease, so a lost cancel costs about this much.
AGAIN_AFTER = 1.0


async def cancel_and_wait(task: asyncio.Task[Any], again_after: float = AGAIN_AFTER) -> None:
    """Cancel ``task``, again every ``again_after`` seconds while it runs on, until it
    has ended. An exception it ended with, other than its cancellation, is raised here,
    as ``await task`` would raise it."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=again_after)
    if not task.cancelled():
        task.result()
