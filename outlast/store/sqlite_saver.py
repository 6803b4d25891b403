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

Two capabilities upstream's SQLite saver lacks, as ``BaseCheckpointSaver`` names them
and the Postgres saver has them: ``acopy_thread`` (a thread's checkpoints, pending writes
and every namespace, as another thread's: ``threads.copy``) and ``aprune``
(``keep_latest``: the latest checkpoint of each namespace, a subgraph call that is over
gone whole, what is kept without a parent; ``delete``: everything). Each is one
transaction on the saver's connection, under its lock, with the statements of
``sql/sqlite/queries_checkpoints.sql``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
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
from outlast.store.sqlfiles import queries
from outlast.store.sqlite_errors import mapped

_PUT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,"
    " parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_WRITES = (
    " INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx,"
    " channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


PRUNE_STRATEGIES = ("keep_latest", "delete")
_PRUNE_STEPS = {
    "keep_latest": (
        "cp_prune_subgraph_calls",  # first: it compares with the root's latest checkpoint
        "cp_prune_keep_latest",
        "cp_prune_parents",
        "cp_prune_writes",
    ),
    "delete": ("cp_delete_checkpoints", "cp_delete_writes"),
}


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

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Every checkpoint of ``source_thread_id`` (each namespace, ids and parents kept)
        and their pending writes, as ``target_thread_id``'s; the source is unchanged, and
        an unknown source copies nothing. ``ValueError``, and nothing copied, if the
        target has a checkpoint already: a copy never merges two lineages."""
        await self.setup()
        sql = queries("sqlite")
        target = str(target_thread_id)
        copy = {"source": str(source_thread_id), "target": target}

        async def statements() -> None:
            await self.conn.execute("BEGIN IMMEDIATE")  # the check and the copy: one snapshot
            cur = await self.conn.execute(sql["cp_thread_has_checkpoints"], {"thread_id": target})
            if await cur.fetchone() is not None:
                raise ValueError(f"thread {target} has checkpoints already; copy to a new one")
            for step in ("cp_copy_checkpoints", "cp_copy_writes"):
                await self.conn.execute(sql[step], copy)

        await self._alone(statements)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: each thread keeps the latest checkpoint of each namespace (a
        subgraph call from an older root checkpoint is over: it goes whole; one from the
        latest, waiting at an interrupt, stays) with its pending writes, and no parent
        (its history starts there); ``delete``: every checkpoint and write goes. All the
        threads in one transaction; unknown ones are no-ops. Raises as upstream's
        Postgres saver does for a single string or an unknown strategy."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread IDs, not a str")
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        ids = [str(t) for t in thread_ids]
        if not ids:
            return
        await self.setup()
        sql = queries("sqlite")
        steps = [sql[name] for name in _PRUNE_STEPS[strategy]]

        async def statements() -> None:
            for thread_id in ids:
                for step in steps:
                    await self.conn.execute(step, {"thread_id": thread_id})

        await self._alone(statements)

    async def _alone(self, statements: Callable[[], Awaitable[None]]) -> None:
        """``statements`` in one transaction of their own, under the saver's lock (the
        group commit's writes wait for it): committed, or rolled back whole."""
        async with self.lock:
            with mapped(self.path):  # a full disk: StoreFull, once rolled back
                try:
                    await statements()
                    await self.conn.commit()
                except BaseException:
                    await self.conn.rollback()
                    raise
