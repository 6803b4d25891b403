"""``keep_latest`` on a thread's checkpoints: only the latest checkpoint of each namespace
stays (a subgraph call that is over goes whole), with its pending writes; what is kept
has no parent, so the thread's history is one entry per namespace and its state reads as
before.

On Postgres this is the saver's own ``aprune`` (LangGraph's checkpoint tables, pruned by
the code that writes them, as ``adelete_thread`` deletes them); LangGraph's SQLite saver
has none, so the statements of ``sql/sqlite/queries_checkpoints.sql`` run on its
connection, under its lock, in one transaction.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from outlast.store.sqlfiles import queries

_SQLITE_STEPS = (
    "cp_prune_subgraph_calls",  # first: it compares with the root's latest checkpoint
    "cp_prune_keep_latest",
    "cp_prune_parents",
    "cp_prune_writes",
)


async def keep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Raises ``NotImplementedError`` for a thread the saver cannot prune (on Postgres, one
    whose graph uses a ``DeltaChannel``: its state is rebuilt from older checkpoints)."""
    if isinstance(saver, AsyncPostgresSaver):
        await saver.aprune([thread_id], strategy="keep_latest")
    elif isinstance(saver, AsyncSqliteSaver):
        await _sqlite_keep_latest(saver, thread_id)
    else:  # pragma: no cover - the stores make one of the two
        raise NotImplementedError(f"keep_latest on {type(saver).__name__}")


async def _sqlite_keep_latest(saver: AsyncSqliteSaver, thread_id: str) -> None:
    await saver.setup()
    sql = queries("sqlite")
    async with saver.lock:
        try:
            for step in _SQLITE_STEPS:
                await saver.conn.execute(sql[step], {"thread_id": thread_id})
        except BaseException:
            await saver.conn.rollback()
            raise
        await saver.conn.commit()
