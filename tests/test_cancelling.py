"""A cancellation that is lost does not leave a closing waiting forever (outlast/cancelling.py).

The nemesis found it: after a Postgres restart, a run whose graph had ended stayed
``running`` with its lease renewed, its execution awaiting its activity loop, which had
been cancelled once while its write waited for a connection and had gone on looping.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from outlast.cancelling import cancel_and_wait
from outlast.runtime.activity import ActivityTracker
from outlast.runtime.sink import EventSink
from outlast.store.records import Lease

# A test's own bound: a closing that hangs fails the test instead of hanging the suite.
BOUND = 10.0


async def _swallows(cancels: int, entered: asyncio.Event) -> str:
    """Goes on after its first ``cancels`` cancellations, as a task whose await lost them."""
    lost = 0
    while True:
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            lost += 1
            if lost > cancels:
                raise


async def test_a_task_that_loses_cancellations_is_cancelled_until_it_ends() -> None:
    entered = asyncio.Event()
    task = asyncio.create_task(_swallows(2, entered))
    await entered.wait()
    await asyncio.wait_for(cancel_and_wait(task, again_after=0.05), BOUND)
    assert task.cancelled()


async def test_the_exception_a_task_ended_with_is_raised() -> None:
    async def fails() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("its cleanup failed") from None

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="its cleanup failed"):
        await cancel_and_wait(task)


async def test_a_cancel_that_wait_for_drops_is_sent_again() -> None:
    """The library's own behaviour: on Python 3.11, a cancel and ``wait_for``'s result in
    the same turn of the loop give the result, and the task goes on (3.12 raises)."""
    result: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    reached = asyncio.Event()

    async def waits() -> None:
        await asyncio.wait_for(result, 60)
        reached.set()
        await asyncio.sleep(3600)  # what comes after the wait: a loop's next turn

    task = asyncio.create_task(waits())
    await asyncio.sleep(0)  # inside wait_for
    result.set_result(1)
    await asyncio.wait_for(cancel_and_wait(task, again_after=0.05), BOUND)
    assert task.cancelled()


class _StuckStore:
    """An activity write that waits for a connection and loses the cancel sent to it."""

    def __init__(self) -> None:
        self.writing = asyncio.Event()
        self.lost = False

    async def set_activity(self, lease: Lease, view: Any, usage: Any = None) -> None:
        self.writing.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if self.lost:
                raise
            self.lost = True  # the caller goes on as though the write came back


class _Sink:
    def put(self, draft: Any) -> None:
        pass


async def test_closing_an_activity_tracker_whose_write_lost_its_cancel_ends() -> None:
    store = _StuckStore()
    tracker = ActivityTracker(
        cast(Any, store), Lease("r", "w", 1), cast(EventSink, _Sink()), ttl=4.0, flush_interval=0.01
    )
    tracker.start("node-1", "send")
    await asyncio.wait_for(store.writing.wait(), BOUND)
    closing = asyncio.create_task(tracker.close())
    done, _ = await asyncio.wait({closing}, timeout=BOUND)
    if not done:  # tidy up what the failure left: a loop cancelled once more ends
        closing.cancel()
    assert done, "closing the tracker waited for a loop that lost its cancel"
    assert store.lost
