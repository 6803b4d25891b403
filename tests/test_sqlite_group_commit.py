"""The embedded store's checkpointer commits the writes of concurrent runs together
(store/sqlite_saver.py), and one write that fails does not fail its batch-mates."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from outlast.store.batcher import Statement
from outlast.store.sqlite import SqliteStore
from outlast.store.sqlite_saver import BatchedSqliteSaver
from tests.harness import open_sqlite


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def _saver(tmp_path: Path) -> tuple[SqliteStore, BatchedSqliteSaver]:
    store = await open_sqlite(tmp_path)
    assert isinstance(store, SqliteStore)
    saver = store.checkpointer()
    assert isinstance(saver, BatchedSqliteSaver)
    return store, saver


async def test_concurrent_checkpoints_share_one_commit(tmp_path: Path) -> None:
    store, saver = await _saver(tmp_path)
    try:
        await saver.setup()
        before = saver.writer.batches
        saved = await asyncio.gather(
            *(saver.aput(_config(f"t{i}"), empty_checkpoint(), {"step": 0}, {}) for i in range(7))
        )
        assert saver.writer.batches - before == 1 and saver.writer.largest == 7
        for i, config in enumerate(saved):
            got = await saver.aget_tuple(config)
            assert got is not None and got.config["configurable"]["thread_id"] == f"t{i}"
    finally:
        await store.close()


async def test_a_failing_write_fails_alone(tmp_path: Path) -> None:
    store, saver = await _saver(tmp_path)
    try:
        await saver.setup()
        good = [
            saver.aput(_config(f"ok{i}"), empty_checkpoint(), {"step": 0}, {}) for i in range(3)
        ]
        bad = saver.writer.submit([Statement("INSERT INTO no_such_table VALUES (1)", ())])
        outcomes = await asyncio.gather(*good, bad, return_exceptions=True)
        assert [isinstance(o, BaseException) for o in outcomes] == [False, False, False, True]
        for i in range(3):
            assert await saver.aget_tuple(_config(f"ok{i}")) is not None
    finally:
        await store.close()
