"""The event log: fenced appends with consecutive seqs, reads, retention and its gaps, and
events carried by checkpoint writes (where the backend ``carries_events``)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from outlast.store import EventDraft, Store
from outlast.store.base import EventLender, Lent
from outlast.store.hub import EVENTS
from outlast.vocabulary import EventType
from tests.store_contract.support import Notes, assert_seqs, claimed, notes_of, shape


async def test_append_assigns_consecutive_seqs_under_concurrency(store: Store) -> None:
    run, lease = await claimed(store)
    await asyncio.gather(
        *(
            store.append(
                lease,
                [
                    EventDraft(EventType.NODE_UPDATED, {"i": i}),
                    EventDraft(EventType.CUSTOM, {"i": i}),
                ],
            )
            for i in range(20)
        )
    )
    events = await store.read_events(run.id, 0, 1000)
    assert [e.seq for e in events] == list(range(1, 43))
    # each batch stays contiguous
    for i in range(2, 42, 2):
        assert events[i].type == EventType.NODE_UPDATED and events[i + 1].type == EventType.CUSTOM
        assert events[i].data == events[i + 1].data


async def test_append_returns_the_last_seq_and_wakes_followers(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    seq = await store.append(lease, [EventDraft(EventType.CUSTOM, {"a": 1})] * 3)
    assert seq == run.last_seq + 3
    got = await store.get_run(run.id)
    assert got is not None and got.last_seq == seq and got.status == run.status
    assert await notes.take() == notes_of(run.id, EVENTS)
    with pytest.raises(ValueError):
        await store.append(lease, [])


async def test_read_events_after_and_limit(store: Store) -> None:
    run, lease = await claimed(store)
    await store.append(lease, [EventDraft(EventType.CUSTOM, {"i": i}) for i in range(5)])
    page = await store.read_events(run.id, 3, 2)
    assert [(e.seq, e.data) for e in page] == [(4, {"i": 1}), (5, {"i": 2})]
    # times are aware on both backends (SQLite stores unix seconds)
    assert all(e.run_id == run.id and e.time.tzinfo is not None for e in page)
    assert run.created_at.tzinfo is not None and run.lease_expires_at is not None
    assert run.lease_expires_at.tzinfo is not None
    assert await store.read_events(run.id, 7, 10) == []
    assert await store.read_events("00000000-0000-0000-0000-000000000000", 0, 10) == []


async def test_prune_and_first_retained(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await store.append(lease, [EventDraft(EventType.CUSTOM, {}) for _ in range(5)])
    await notes.take()
    assert await store.first_retained_seq(run.id) == 1
    assert await store.prune_events(run.id, 4) == 4
    assert await store.first_retained_seq(run.id) == 5
    assert [e.seq for e in await store.read_events(run.id, 0, 100)] == [5, 6, 7]
    assert await store.prune_events(run.id, 4) == 0
    assert await notes.take() == set()  # retention is no transition of the run
    # the seq goes on where it was, leaving the gap readers detect
    assert await store.append(lease, [EventDraft(EventType.CUSTOM, {})]) == 8
    assert await store.first_retained_seq("00000000-0000-0000-0000-000000000000") is None


async def test_prune_keeps_the_newest_per_run(store: Store) -> None:
    run, lease = await claimed(store)
    await store.append(lease, [EventDraft(EventType.CUSTOM, {}) for _ in range(8)])  # seqs 1..10
    other, other_lease = await claimed(store)  # seqs 1..2
    await store.prune(keep=3, max_age=3600)
    assert [e.seq for e in await store.read_events(run.id, 0, 100)] == [8, 9, 10]
    assert_seqs(await store.read_events(other.id, 0, 100), 1)
    await store.prune(keep=100, max_age=-1)  # everything is older than "one second ahead"
    assert await store.first_retained_seq(run.id) is None
    assert await store.first_retained_seq(other.id) is None
    assert await store.append(other_lease, [EventDraft(EventType.CUSTOM, {})]) == 3


class _Lender:
    """A sink with a batch to lend once, recording what was settled."""

    def __init__(self, batch: list[EventDraft]) -> None:
        self.batch: list[EventDraft] | None = batch
        self.settled: list[tuple[list[EventDraft], int | None]] = []

    def lend(self) -> Lent | None:
        batch, self.batch = self.batch, None
        return Lent(batch, str(uuid.uuid4())) if batch else None

    def settle(self, lent: Lent, seq: int | None) -> None:
        self.settled.append((lent.events, seq))


async def test_carried_events_land_with_the_checkpoint(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    batch = [EventDraft(EventType.NODE_UPDATED, {"node": "a"})]
    lender = _Lender(batch)
    lent: EventLender = lender
    saver = store.checkpointer(lease, lent)
    config: RunnableConfig = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}}
    await saver.aput(config, empty_checkpoint(), {"source": "loop", "step": 0}, {})
    assert await saver.aget_tuple(config) is not None
    events = await store.read_events(run.id, run.last_seq, 10)
    if store.carries_events:
        # borrowed by the write, appended in its transaction, and given back with its seq
        assert shape(events) == [(EventType.NODE_UPDATED, {"node"})]
        assert lender.settled == [(batch, run.last_seq + 1)]
        assert await notes.take() == notes_of(run.id, EVENTS)
    else:
        # the saver never borrows: the sink appends by itself
        assert events == [] and lender.batch == batch and lender.settled == []
        assert await notes.take() == set()
