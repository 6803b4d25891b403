"""The Postgres checkpointer, fenced by the run's lease, group-committed, and free of the
global lock.

Three changes to ``AsyncPostgresSaver``:

- No instance lock. Upstream takes one ``asyncio.Lock`` around every cursor, even on a
  pool (langgraph#7259), which would serialize the checkpoint I/O of every run sharing
  a saver. Each run gets its own saver here, and each cursor its own pool connection.
- Fenced writes. Every write starts with ``outlast_fence()``, which locks the run row
  ``FOR KEY SHARE`` and fails unless this worker still holds the lease at this epoch. A
  worker presumed dead that wakes up again cannot add a checkpoint (or the pending
  writes a successor would take for finished tasks) to a thread another worker now owns:
  the reaper selects expired runs ``FOR UPDATE SKIP LOCKED``, which skips a run while a
  checkpoint of its holder is in flight, and any later write of the old holder is
  refused. A write that carries the run's events starts with their append instead, which
  is the fence too: it updates the run row under the same lease condition (a stronger
  lock, which the reaper skips as well) and calls ``outlast_fence()`` to raise when it
  matched nothing.
- Group commit. ``aput`` and ``aput_writes`` hand their statements to the store's
  ``GroupCommit`` (group_commit.py), which sends the writes of every run pending at that
  moment in one pipeline, one transaction, and returns to each once it committed. Other
  writes (``adelete_thread``, the API's unleased saver without a store's writer) keep
  their own pipeline here, fenced the same way.

Why no BEGIN/COMMIT: in a pipeline every statement up to the Sync (psycopg sends one
when the pipeline block ends) runs in one implicit transaction, committed at the Sync
if all succeeded and rolled back whole if one failed; the server skips whatever follows
a failed statement. So the fences, the writes and the commit leave in one round trip
with each fence's verdict decided on the server.

One capability upstream lacks: ``acopy_thread`` (``threads.copy``), a thread's checkpoints,
blobs and pending writes of every namespace copied as another thread's by three
``INSERT … SELECT`` statements (``sql/postgres/queries_checkpoints.sql``) in one
transaction, fenced as the other writes are when the saver holds a lease. ``aprune`` is
upstream's (``keep_latest`` refuses a thread whose graph uses a ``DeltaChannel``).

One change to ``aput`` and ``aput_writes``: upstream serializes the checkpoint's blobs
and the task's writes in a thread; here they are serialized on the loop before the write
is handed over. A step's state is a few kilobytes, cheaper to encode than a thread hop is
to make: 1.9 ms less server CPU per run of the 10-node graph at 50 in flight
(bench/results/profiles/issue31-inline-serde-ab.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from outlast.errors import LeaseLost
from outlast.store import pg_pool
from outlast.store.base import EventLender, Lease
from outlast.store.batcher import Statement
from outlast.store.group_commit import FENCE, FENCE_REFUSED, AppendStatement, GroupCommit
from outlast.store.outage import ride_out
from outlast.store.sqlfiles import queries


class FencedPostgresSaver(AsyncPostgresSaver):
    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        lease: Lease | None,
        events: EventLender | None = None,
        append: AppendStatement | None = None,
        group: GroupCommit | None = None,
    ) -> None:
        super().__init__(pool)
        self.pool = pool
        self.lease = lease
        self.events = events if lease is not None and append is not None else None
        self.append = append
        self.group = group

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Upstream's ``aput`` (langgraph-checkpoint-postgres 3.2), its blobs serialized
        before the connection is taken rather than while it is held."""
        configurable = config["configurable"].copy()
        thread_id = configurable.pop("thread_id")
        checkpoint_ns = configurable.pop("checkpoint_ns")
        checkpoint_id = configurable.pop("checkpoint_id", None)
        copy = checkpoint.copy()
        copy["channel_values"] = copy["channel_values"].copy()
        # primitive values stay inline in the checkpoint row, the others go to blobs
        blob_values = {}
        for k, v in checkpoint["channel_values"].items():
            if isinstance(v, _DeltaSnapshot):
                blob_values[k] = copy["channel_values"].pop(k)
                copy["channel_values"][k] = True
            elif not (v is None or isinstance(v, str | int | float | bool)):
                blob_values[k] = copy["channel_values"].pop(k)
        blob_versions = {k: v for k, v in new_versions.items() if k in blob_values}
        blobs = (
            self._dump_blobs(thread_id, checkpoint_ns, blob_values, blob_versions)
            if blob_versions
            else None
        )
        row = (
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            checkpoint_id,
            Jsonb(copy),
            Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
        )
        statements = (
            [Statement(self.UPSERT_CHECKPOINT_BLOBS_SQL, blobs, many=True)] if blobs else []
        )
        statements.append(Statement(self.UPSERT_CHECKPOINTS_SQL, row))
        await self._commit(statements)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
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
        """Upstream's ``aput_writes`` (langgraph-checkpoint-postgres 3.2), committed with
        the process's other checkpoint writes."""
        query = (
            self.UPSERT_CHECKPOINT_WRITES_SQL
            if all(w[0] in WRITES_IDX_MAP for w in writes)
            else self.INSERT_CHECKPOINT_WRITES_SQL
        )
        configurable = config["configurable"]
        params = self._dump_writes(  # on the loop, as aput's blobs
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        await self._commit([Statement(query, params, many=True)])

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Every checkpoint of ``source_thread_id`` (each namespace, ids and parents kept),
        the blobs they name and their pending writes, as ``target_thread_id``'s; the
        source is unchanged, and an unknown source copies nothing. ``ValueError``, and
        nothing copied, if the target has a checkpoint already: a copy never merges two
        lineages. One transaction (one snapshot), fenced first when the saver holds a
        lease."""
        sql = queries("postgres")
        target = str(target_thread_id)
        copy = {"source": str(source_thread_id), "target": target}
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            # one snapshot for the check and the three copies: a run writing to the source
            # meanwhile is copied up to a checkpoint, with that checkpoint's blobs and writes
            await cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            await self._fence(cur)
            await cur.execute(sql["cp_thread_has_checkpoints"], {"thread_id": target})
            if await cur.fetchone() is not None:
                raise ValueError(f"thread {target} has checkpoints already; copy to a new one")
            for step in ("cp_copy_checkpoints", "cp_copy_blobs", "cp_copy_writes"):
                await cur.execute(sql[step], copy)

    async def _fence(self, cur: AsyncCursor[Any]) -> None:
        """``outlast_fence()`` on ``cur``'s transaction when the saver holds a lease:
        ``LeaseLost`` unless this worker still holds it at this epoch."""
        lease = self.lease
        if lease is None:
            return
        try:
            await cur.execute(FENCE, (lease.run_id, lease.worker_id, lease.epoch))
        except psycopg.Error as exc:
            if exc.sqlstate == FENCE_REFUSED:
                raise LeaseLost(
                    f"run {lease.run_id}: checkpoint refused, lease epoch "
                    f"{lease.epoch} is no longer held"
                ) from exc
            raise

    async def _commit(self, statements: list[Statement]) -> None:
        group = self.group
        if group is not None and self.lease is not None:
            # sent again through a restart of the database: upserts, fenced (outage.py)
            lease = self.lease
            await ride_out(
                lambda: group.write(lease, statements, self.events),
                f"run {lease.run_id}: checkpoint write",
            )
            return
        if group is None:
            async with self._cursor(pipeline=True) as cur:
                for st in statements:
                    if st.many:
                        await cur.executemany(st.sql, st.params)
                    else:
                        await cur.execute(st.sql, st.params)
            return
        await group.write(self.lease, statements, self.events)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        async with self.pool.connection() as conn:
            if not pipeline:
                async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                    yield cur
                return
            lease = self.lease
            # The run's pending events ride along: one more statement in the same
            # implicit transaction, so they land with this write or not at all.
            batch = self.events.lend() if self.events is not None else None
            seq: int | None = None
            try:
                async with conn.cursor(row_factory=dict_row) as carried:
                    async with (
                        pg_pool.pipeline(conn),
                        conn.cursor(binary=True, row_factory=dict_row) as cur,
                    ):
                        if batch and lease is not None and self.append is not None:
                            # the carried append fences the write itself (queries.sql)
                            await carried.execute(*self.append(lease, batch))
                        elif lease is not None:
                            await cur.execute(FENCE, (lease.run_id, lease.worker_id, lease.epoch))
                        yield cur
                    if batch:  # the pipeline is synced: the append's row is here
                        row = await carried.fetchone()
                        seq = int(row["seq"]) if row is not None else None
            except psycopg.Error as exc:
                if lease is not None and exc.sqlstate == FENCE_REFUSED:
                    raise LeaseLost(
                        f"run {lease.run_id}: checkpoint refused, lease epoch "
                        f"{lease.epoch} is no longer held"
                    ) from exc
                raise
            finally:
                if batch and self.events is not None:
                    self.events.settle(batch, seq)
