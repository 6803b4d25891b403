"""The embedded store's checkpointer: LangGraph's ``AsyncSqliteSaver`` with group commit.

Upstream commits every ``aput`` and ``aput_writes`` on its own, each under the saver's
lock: with many runs in one process their steps queue on that lock one commit at a time.
Here both hand their statement to a writer (batcher.py) that runs every write pending at
that moment in one transaction, under the same lock, and answers each caller after the
commit: the same durability, one commit (and one lock cycle) for many runs' steps. The
statements and their parameters are upstream's (langgraph-checkpoint-sqlite 3.x), built
before the write is handed over so the serialization stays in the caller's task.

Not fenced: the checkpoints are in their own file, so no transaction covers them and the
run's lease (see ARCHITECTURE.md); an error in a batch is isolated as on Postgres, each
write then committed alone, so one bad write fails alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from outlast.store.batcher import Batcher, Statement
from outlast.store.sqlite_errors import mapped

_PUT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,"
    " parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITES = (
    " INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx,"
    " channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class BatchedSqliteSaver(AsyncSqliteSaver):
    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        super().__init__(conn)
        self.path = path
        self.writer: Batcher[Sequence[Statement]] = Batcher(
            self._transaction,
            isolate=lambda exc: isinstance(exc, Exception),
            failure=lambda _, exc: exc,
            name="outlast-sqlite-group-commit",
        )

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        await self.setup()
        configurable = config["configurable"]
        type_, serialized = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        row = (
            str(configurable["thread_id"]),
            configurable["checkpoint_ns"],
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            type_,
            serialized,
            meta.encode("utf-8", "ignore"),
        )
        await self.writer.submit([Statement(_PUT, row)])
        return {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable["checkpoint_ns"],
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.setup()
        verb = (
            "INSERT OR REPLACE"
            if all(w[0] in WRITES_IDX_MAP for w in writes)
            else "INSERT OR IGNORE"
        )
        configurable = config["configurable"]
        rows = [
            (
                str(configurable["thread_id"]),
                str(configurable["checkpoint_ns"]),
                str(configurable["checkpoint_id"]),
                task_id,
                task_path,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *self.serde.dumps_typed(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        await self.writer.submit([Statement(verb + _WRITES, rows, many=True)])

    async def _transaction(self, batch: list[Sequence[Statement]]) -> None:
        async with self.lock:
            with mapped(self.path):  # a full disk: StoreFull, once rolled back
                try:
                    for statements in batch:
                        for st in statements:
                            if st.many:
                                await self.conn.executemany(st.sql, st.params)
                            else:
                                await self.conn.execute(st.sql, st.params)
                    await self.conn.commit()
                except BaseException:
                    await self.conn.rollback()
                    raise
