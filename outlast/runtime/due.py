"""The loop of a worker component that takes due work from the store: the waker's waits
and the cron scheduler's ticks.

Both claim a batch (each item goes to one process: ``FOR UPDATE SKIP LOCKED``, or
SQLite's one writer), handle its items concurrently, and claim again at once while the
batches come full: a backlog drains without naps. Otherwise the loop naps until the next
item is due on the database's clock, at most ``cap`` seconds (a clock that drifted or an
item another process made is found by then), and a notice on ``channel`` wakes it early:
an item made meanwhile may be due sooner than the nap. A database that is down is logged
and tried again after ``cap``; anything else escapes to the loop's supervisor
(``loops.supervised``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from outlast.store.hub import Hub, wait_for

log = logging.getLogger(__name__)

T = TypeVar("T")


async def serve_due(
    name: str,
    hub: Hub,
    channel: str,
    claim: Callable[[int], Awaitable[Sequence[T]]],
    handle: Callable[[T], Awaitable[None]],
    next_in: Callable[[], Awaitable[float | None]],
    cap: Callable[[], float],
    batch: int,
) -> None:
    """Claim, handle and nap, for ever. ``next_in``: seconds until the next item is due
    (None: none is); ``cap`` is read each round, so settings changed in a test apply."""
    with hub.watch(channel) as noticed:
        while True:
            noticed.clear()
            try:
                items = await claim(batch)
                await asyncio.gather(*(handle(item) for item in items))
                if len(items) == batch:
                    continue
                nap = await next_in()
            except Exception as exc:  # the database may be down: keep going
                log.warning("%s failed: %s", name, exc)
                nap = None
            limit = cap()
            await wait_for(noticed, limit if nap is None else min(max(nap, 0.01), limit))
