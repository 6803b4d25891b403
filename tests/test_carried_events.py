"""On Postgres a run's checkpoint writes carry its pending events: in the same
transaction, in order with the sink's own writes, and back to the sink if the write
fails."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from outlast.errors import LeaseLost
from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, Lease
from outlast.store.postgres import PostgresStore
from tests.harness import eventually
from tests.util import new_run


async def _claimed(store: PostgresStore) -> tuple[Lease, str]:
    new = new_run()
    run, _ = await store.create_run(new)
    (claimed,) = await store.claim("w", 30, 1)
    return Lease(run.id, "w", claimed.lease_epoch), new.thread_id


@contextlib.asynccontextmanager
async def _sink(
    store: PostgresStore, window: float, due_hold: float = 0.0
) -> AsyncIterator[tuple[EventSink, Lease, str]]:
    """A claimed run's sink, holding step events for ``window`` seconds (``due_hold``
    once their step is over)."""
    lease, thread = await _claimed(store)
    sink = EventSink(store, lease, lambda exc: None, carry_window=window, due_hold=due_hold)
    try:
        yield sink, lease, thread
    finally:
        await sink.close()


async def _types(store: PostgresStore, run_id: str) -> list[tuple[int, str]]:
    return [(e.seq, e.type) for e in await store.read_events(run_id, 0, 100)]


async def _checkpoint(store: PostgresStore, lease: Lease, sink: EventSink, thread: str) -> None:
    saver = store.checkpointer(lease, sink)
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {"source": "loop", "step": 0}, {})


async def test_a_step_event_rides_in_the_next_checkpoint_write(pg: PostgresStore) -> None:
    async with _sink(pg, 30.0) as (sink, lease, thread):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        sink.put(EventDraft("node.updated", {"node": "b"}))
        await asyncio.sleep(0)  # the sink wakes up and holds them for a checkpoint
        await _checkpoint(pg, lease, sink, thread)
        assert (sink.carried, sink.writes) == (1, 0)
        assert sink.last_seq == 4
        assert await _types(pg, lease.run_id) == [
            (1, "run.created"),
            (2, "run.started"),
            (3, "node.updated"),
            (4, "node.updated"),
        ]
        await sink.flush()  # nothing left: returns at once


async def test_live_events_are_not_held_for_a_checkpoint(pg: PostgresStore) -> None:
    async with _sink(pg, 30.0) as (sink, lease, _):
        sink.put(EventDraft("custom", {"n": 1}))  # what a client watches live
        await eventually(lambda: sink.writes == 1, every=0.01)
        assert (await _types(pg, lease.run_id))[-1] == (3, "custom")


async def test_without_a_checkpoint_the_sink_writes_after_the_window(pg: PostgresStore) -> None:
    async with _sink(pg, 0.05) as (sink, lease, _):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        await eventually(lambda: sink.writes == 1, every=0.01)
        assert sink.carried == 0
        assert (await _types(pg, lease.run_id))[-1] == (3, "node.updated")


async def test_a_finished_steps_events_wait_past_the_window_for_its_checkpoint(
    pg: PostgresStore,
) -> None:
    """A busy loop brings the step's checkpoint write later than the window: once the
    step is over its events keep waiting for it instead of costing a transaction."""
    async with _sink(pg, 0.02, due_hold=30.0) as (sink, lease, thread):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        sink.step_over()
        await asyncio.sleep(0.2)  # ten windows
        assert sink.writes == 0
        await _checkpoint(pg, lease, sink, thread)
        assert (sink.carried, sink.writes) == (1, 0)
        assert (await _types(pg, lease.run_id))[-1] == (3, "node.updated")


async def test_an_earlier_carried_write_settling_does_not_end_the_wait(
    pg: PostgresStore,
) -> None:
    """A step's events put while the checkpoint write carrying the previous step's is
    still in flight wait for their own checkpoint, not for that one to settle (seen at
    one run at a time: a step in ten went out as a transaction of its own)."""
    async with _sink(pg, 0.02, due_hold=30.0) as (sink, lease, thread):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        await asyncio.sleep(0)
        lent = sink.lend()  # the previous step's checkpoint write takes a
        assert lent is not None
        sink.put(EventDraft("node.updated", {"node": "b"}))
        sink.step_over()
        await asyncio.sleep(0.05)
        await pg.append(lease, lent.events, lent.token)  # what the carrier stored, then it settles
        sink.settle(lent, 3)
        await asyncio.sleep(0.1)
        assert sink.writes == 0  # b still waits for its step's checkpoint
        await _checkpoint(pg, lease, sink, thread)
        assert (sink.carried, sink.writes) == (2, 0)
        assert (await _types(pg, lease.run_id))[-2:] == [(3, "node.updated"), (4, "node.updated")]


async def test_a_live_event_ends_the_wait_for_a_checkpoint(pg: PostgresStore) -> None:
    async with _sink(pg, 0.02, due_hold=30.0) as (sink, lease, _):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        sink.step_over()
        await asyncio.sleep(0.1)
        sink.put(EventDraft("custom", {"n": 1}))  # the next step's, watched live
        await eventually(lambda: sink.writes == 1, every=0.01)
        assert (await _types(pg, lease.run_id))[-2:] == [(3, "node.updated"), (4, "custom")]


async def test_without_a_due_hold_a_finished_step_keeps_the_plain_window(
    pg: PostgresStore,
) -> None:
    """Durability "exit": no checkpoint follows a step, so nothing waits for one."""
    async with _sink(pg, 0.05) as (sink, lease, _):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        sink.step_over()
        await eventually(lambda: sink.writes == 1, every=0.01)
        assert (await _types(pg, lease.run_id))[-1] == (3, "node.updated")


async def test_a_carrier_without_the_lease_is_refused_whole(pg: PostgresStore) -> None:
    """The carried append is the write's fence: a holder that lost its lease stores
    neither the events nor the checkpoint, and gets LeaseLost, as with the plain fence."""
    async with _sink(pg, 30.0) as (sink, lease, thread):
        async with pg.pool.connection() as conn:  # another worker took the run over
            await conn.execute(
                "UPDATE outlast_runs SET lease_epoch = lease_epoch + 1 WHERE id = %s",
                (lease.run_id,),
            )
        sink.put(EventDraft("node.updated", {"node": "a"}))
        await asyncio.sleep(0)
        with pytest.raises(LeaseLost, match="no longer held"):
            await _checkpoint(pg, lease, sink, thread)
        assert sink.carried == 0
        assert await _types(pg, lease.run_id) == [(1, "run.created"), (2, "run.started")]
        async with pg.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s", (thread,)
            )
            assert (await cur.fetchone() or {}).get("n") == 0


async def test_a_failed_carrier_gives_the_events_back_in_order(pg: PostgresStore) -> None:
    async with _sink(pg, 30.0) as (sink, lease, _):
        sink.put(EventDraft("node.updated", {"node": "a"}))
        await asyncio.sleep(0)
        saver = pg.checkpointer(lease, sink)
        with pytest.raises(Exception, match="division by zero"):
            async with saver._cursor(pipeline=True) as cur:
                await cur.execute("SELECT 1/0")  # the write fails after the append
        assert sink.carried == 0
        sink.put(EventDraft("custom", {"after": True}))
        await sink.flush()
        events = await pg.read_events(lease.run_id, 0, 100)
        assert [(e.seq, e.type) for e in events] == [
            (1, "run.created"),
            (2, "run.started"),
            (3, "node.updated"),  # rolled back with the failed write, then written again
            (4, "custom"),
        ]
        assert sink.last_seq == 4
