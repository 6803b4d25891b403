"""The fenced Postgres checkpointer: writes of the lease holder land, writes of a holder
that lost its lease are refused whole, and the pool's connection comes back clean."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from outlast.errors import LeaseLost
from outlast.store import Lease
from outlast.store.postgres import PostgresStore
from tests.util import new_run


async def _counts(store: PostgresStore) -> tuple[int, int, int]:
    async with store.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT (SELECT count(*) FROM checkpoints) AS c,"
            " (SELECT count(*) FROM checkpoint_blobs) AS b,"
            " (SELECT count(*) FROM checkpoint_writes) AS w"
        )
        row = await cur.fetchone()
    assert row is not None
    return row["c"], row["b"], row["w"]


async def _write_step(store: PostgresStore, lease: Lease, thread_id: str) -> None:
    """What LangGraph does in a step: a checkpoint (with a blob channel), then the
    pending writes of a task against it."""
    saver = store.checkpointer(lease)
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"steps": ["a", "b"]}
    checkpoint["channel_versions"] = {"steps": 1}
    saved = await saver.aput(config, checkpoint, {"source": "loop", "step": 0}, {"steps": 1})
    await saver.aput_writes(saved, [("steps", ["c"])], "task-1")


async def _claimed(store: PostgresStore, worker: str, ttl: float) -> tuple[Lease, str]:
    new = new_run()
    run, _ = await store.create_run(new)
    (claimed,) = await store.claim(worker, ttl, 1)
    assert claimed.id == run.id
    return Lease(run.id, worker, claimed.lease_epoch), new.thread_id


async def test_the_lease_holder_writes_checkpoints_and_writes(pg: PostgresStore) -> None:
    lease, thread_id = await _claimed(pg, "w1", 30)
    await _write_step(pg, lease, thread_id)
    assert await _counts(pg) == (1, 1, 1)
    state = await pg.checkpointer(lease).aget_tuple(
        {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    )
    assert state is not None and state.checkpoint["channel_values"]["steps"] == ["a", "b"]
    assert [w[1:] for w in state.pending_writes or []] == [("steps", ["c"])]


async def test_a_lost_lease_refuses_the_whole_write(pg: PostgresStore) -> None:
    lease, thread_id = await _claimed(pg, "old", 0.01)
    reaped = []
    for _ in range(500):  # until the 10 ms lease has passed on database time
        if reaped := await pg.reap():
            break
    assert [r.run_id for r in reaped] == [lease.run_id]
    (again,) = await pg.claim("new", 30, 1)
    assert again.lease_epoch > lease.epoch
    saver = pg.checkpointer(lease)
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"steps": ["stale"]}
    checkpoint["channel_versions"] = {"steps": 1}
    with pytest.raises(LeaseLost, match="no longer held"):
        await saver.aput(config, checkpoint, {"source": "loop", "step": 0}, {"steps": 1})
    stale: RunnableConfig = {
        "configurable": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": "x"}
    }
    with pytest.raises(LeaseLost):
        await saver.aput_writes(stale, [("steps", ["late"])], "task-1")
    # nothing of either write landed: the blob, the checkpoint and the writes were in the
    # transaction the failed fence aborted
    assert await _counts(pg) == (0, 0, 0)
    # the pool's connections came back idle, not inside an aborted transaction: every
    # connection of the pool still runs a write for the new holder
    new_lease = Lease(lease.run_id, "new", again.lease_epoch)
    await asyncio.gather(*(_write_step(pg, new_lease, f"{thread_id}-{i}") for i in range(25)))
    assert await _counts(pg) == (25, 25, 25)


async def test_an_error_inside_a_write_rolls_it_back(pg: PostgresStore) -> None:
    """A failure after the fence (here a statement the server rejects) rolls back what the
    write sent before it, and is raised as itself, not as a lost lease."""
    lease, _ = await _claimed(pg, "w1", 30)
    saver = pg.checkpointer(lease)
    with pytest.raises(Exception) as caught:
        async with saver._cursor(pipeline=True) as cur:
            await cur.execute(
                "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id,"
                " task_id, idx, channel, type, blob) VALUES ('t', '', 'c', 'k', 0, 'ch',"
                " 'json', '\\x00')"
            )
            await cur.execute("SELECT 1/0")
    assert not isinstance(caught.value, LeaseLost)
    assert "division by zero" in str(caught.value)
    assert await _counts(pg) == (0, 0, 0)
