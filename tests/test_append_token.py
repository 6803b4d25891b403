"""An append whose answer was lost is not appended twice when it is sent again.

When the connection to Postgres breaks after a commit but before its answer arrives (the
server restarted, the network dropped), the writer cannot tell whether its batch of
events was stored. The sink sends it again, and before batch tokens it was stored twice:
the nemesis (bench/nemesis.py) saw a tick streamed twice in one attempt after a Postgres
restart. Here the lost answer is made exact: the write commits, then the caller gets the
error a broken connection gives.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, Lease
from outlast.store.group_commit import GroupCommit
from outlast.store.postgres import PostgresStore
from tests.util import new_run

LOST = "consuming input failed: server closed the connection unexpectedly"


async def _claimed(store: PostgresStore) -> tuple[Lease, str]:
    new = new_run()
    run, _ = await store.create_run(new)
    (claimed,) = await store.claim("w", 30, 1)
    return Lease(run.id, "w", claimed.lease_epoch), new.thread_id


async def _log(store: PostgresStore, run_id: str) -> list[tuple[int, str, Any]]:
    return [(e.seq, e.type, e.data) for e in await store.read_events(run_id, 0, 100)]


async def test_a_batch_sent_again_with_its_token_is_stored_once(pg: PostgresStore) -> None:
    lease, _ = await _claimed(pg)
    batch = [EventDraft("custom", {"tick": 0}), EventDraft("custom", {"tick": 1})]
    token = str(uuid.uuid4())
    first = await pg.append(lease, batch, token)
    again = await pg.append(lease, batch, token)
    assert again == first
    other = await pg.append(lease, batch, str(uuid.uuid4()))  # another batch: stored
    assert other == first + 2
    ticks = [data["tick"] for _, kind, data in await _log(pg, lease.run_id) if kind == "custom"]
    assert ticks == [0, 1, 0, 1]


async def test_a_sink_write_whose_answer_was_lost_is_stored_once(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease, _ = await _claimed(pg)
    real = PostgresStore.append
    lost: list[int] = []

    async def commits_then_loses(
        self: PostgresStore, lease: Lease, events: Sequence[EventDraft], token: str | None = None
    ) -> int:
        seq = await real(self, lease, events, token)
        if not lost:
            lost.append(seq)
            raise psycopg.OperationalError(LOST)
        return seq

    monkeypatch.setattr(PostgresStore, "append", commits_then_loses)
    sink = EventSink(pg, lease, lambda exc: None)
    try:
        sink.put(EventDraft("custom", {"tick": 0}))
        await sink.flush()
    finally:
        await sink.close()
    assert lost, "the first write's answer was not lost"
    log = await _log(pg, lease.run_id)
    assert [(kind, data) for _, kind, data in log if kind == "custom"] == [("custom", {"tick": 0})]
    assert sink.last_seq == lost[0]


async def test_a_carried_write_whose_answer_was_lost_leaves_its_events_once(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease, thread = await _claimed(pg)
    real = GroupCommit._send

    async def commits_then_loses(self: GroupCommit, *args: Any) -> None:
        await real(self, *args)  # the pipeline synced: the transaction committed
        raise psycopg.OperationalError(LOST)

    monkeypatch.setattr(GroupCommit, "_send", commits_then_loses)
    sink = EventSink(pg, lease, lambda exc: None, carry_window=30.0)
    try:
        sink.put(EventDraft("node.updated", {"node": "a"}))
        await asyncio.sleep(0)  # the sink holds it for the next checkpoint write
        saver = pg.checkpointer(lease, sink)
        config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        with pytest.raises(psycopg.OperationalError):
            await saver.aput(config, empty_checkpoint(), {"source": "loop", "step": 0}, {})
        assert sink.carried == 0  # the carrier could not say it stored them
        monkeypatch.setattr(GroupCommit, "_send", real)
        await sink.flush()  # the sink sends the batch again, with its token
    finally:
        await sink.close()
    log = await _log(pg, lease.run_id)
    assert [data for _, kind, data in log if kind == "node.updated"] == [{"node": "a"}]
