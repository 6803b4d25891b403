"""Group commit: the fenced checkpoint writes of concurrent runs share transactions.

Why: a step of a run costs a checkpoint write (``aput``) and its tasks' writes
(``aput_writes``), each a transaction of its own, with its own pool checkout, round trip
and commit. With fifty runs on one process that is most of what the server and Postgres
do (bench/results/profiles: 42 transactions per run of the 10-node graph, checkpoint
writes 42% of the server's samples). Here one writer per process takes every write that
is pending, sends them in one pipeline that is one implicit transaction, and answers each
caller once the transaction has committed.

What does not change:

- Durability. A caller's ``aput`` returns only after the transaction holding its write
  committed; a process killed before the commit acknowledged nothing
  (``tests/test_group_commit_crash.py`` stalls a batch there and kills the process).
- The fence. Each write in a batch starts with its own fence (or with the append of the
  run's carried events, which fences too), exactly as it did alone. A refused fence
  aborts the shared transaction, which then is done again one write per transaction, so
  the fenced-out write is refused alone and its batch-mates commit: a takeover is rare,
  so this second pass costs nothing in the common case. It is only taken when the
  server reported the error and the connection survived it (nothing was committed); a
  broken connection fails every write of the batch, as it failed each write before.
- Order. Writes go out in the order they were submitted, and one batch is in flight at a
  time, so the writes of a run stay in its order.
- Natural batching (batcher.py). Nothing waits for a batch to fill: a write submitted
  while the writer is idle goes at once, alone; writes submitted while a batch is in
  flight go together in the next one. One run alone pays a task switch more, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from outlast.errors import LeaseLost
from outlast.faults import BATCH_BEFORE_COMMIT, afault_point
from outlast.store.base import EventLender, Lease, Lent
from outlast.store.batcher import Batcher, Statement
from outlast.store.pg_pool import pipeline

FENCE = "SELECT outlast_fence(%s, %s, %s)"
FENCE_MANY = (
    "SELECT count(outlast_fence(r, w, e))"
    " FROM unnest(%s::uuid[], %s::text[], %s::bigint[]) AS f (r, w, e)"
)
FENCE_REFUSED = "OL001"  # the SQLSTATE outlast_fence() raises (migration 0008)

# The store's append for a lease and a batch as (statement, parameters): a statement
# that fences as ``outlast_fence()`` does (raises OL001 unless the lease is held).
AppendStatement = Callable[[Lease, Lent], tuple[str, dict[str, Any]]]


@dataclass(eq=False, slots=True)
class _Write:
    lease: Lease | None
    statements: Sequence[Statement]
    events: EventLender | None
    lent: Lent | None = None


class GroupCommit:
    """The process's writer of fenced checkpoint writes, on ``pool``."""

    def __init__(self, pool: AsyncConnectionPool[Any], append: AppendStatement) -> None:
        self.pool = pool
        self._append = append
        self.writer: Batcher[_Write] = Batcher(
            self._transaction,
            isolate=lambda exc: isinstance(exc, _Rolledback),
            failure=_failure,
            name="outlast-group-commit",
        )

    async def write(
        self,
        lease: Lease | None,
        statements: Sequence[Statement],
        events: EventLender | None = None,
    ) -> None:
        """Commit ``statements`` fenced by ``lease`` (with the pending events of
        ``events``, if any, carried along); returns once committed. Raises ``LeaseLost``
        when the fence refused this write, or the error that failed its transaction."""
        await self.writer.submit(_Write(lease, statements, events))

    async def close(self) -> None:
        await self.writer.close()

    async def _transaction(self, batch: list[_Write]) -> None:
        """One pipeline, one implicit transaction, committed at its Sync. Raises
        ``_Rolledback`` when the server refused a statement and nothing was committed."""
        async with self.pool.connection() as conn:
            carriers: list[tuple[_Write, psycopg.AsyncCursor[Any]]] = []
            for write in batch:
                if write.events is not None and write.lease is not None:
                    write.lent = write.events.lend()
            try:
                await self._send(conn, batch, carriers)
            except psycopg.Error as exc:
                _settle(batch, {})
                # the server refused a statement: nothing was committed (the pipeline
                # closed the connection, whose prepared statements psycopg misjudges)
                if exc.sqlstate is not None and not conn.broken:
                    raise _Rolledback(exc) from exc
                raise
            except BaseException:
                _settle(batch, {})
                raise
            seqs: dict[int, int | None] = {}
            for write, cur in carriers:  # the pipeline is synced: their rows are here
                row = await cur.fetchone()
                seqs[id(write)] = int(row["seq"]) if row is not None else None
            _settle(batch, seqs)

    async def _send(
        self,
        conn: AsyncConnection[Any],
        batch: list[_Write],
        carriers: list[tuple[_Write, psycopg.AsyncCursor[Any]]],
    ) -> None:
        async with pipeline(conn), conn.cursor(binary=True, row_factory=dict_row) as cur:
            # One statement fences every lease of the batch whose write carries no
            # events: its row locks hold until the commit, so they cover each write
            # that follows; a carried append fences its own write (queries.sql).
            fenced = {w.lease for w in batch if w.lease is not None and not w.lent}
            if len(fenced) == 1:  # a run alone: three scalars cost less to send than arrays
                (only,) = fenced
                await cur.execute(FENCE, (only.run_id, only.worker_id, only.epoch))
            elif fenced:
                await cur.execute(FENCE_MANY, _columns(fenced))
            for write in batch:
                lease = write.lease
                if write.lent and lease is not None:
                    carried = conn.cursor(row_factory=dict_row)
                    await carried.execute(*self._append(lease, write.lent))
                    carriers.append((write, carried))
                for st in write.statements:
                    if st.many:
                        await cur.executemany(st.sql, st.params)
                    else:
                        await cur.execute(st.sql, st.params)
            if len(batch) > 1:
                # written, not committed: the Sync (the commit) leaves as the block ends
                await afault_point(BATCH_BEFORE_COMMIT)


class _Rolledback(Exception):
    """The server refused a statement of the transaction; nothing of it was committed."""

    def __init__(self, error: psycopg.Error) -> None:
        super().__init__(str(error))
        self.error = error


def _columns(leases: set[Lease]) -> tuple[list[str], list[str], list[int]]:
    ordered = sorted(leases, key=lambda lease: lease.run_id)  # one lock order for all
    return (
        [lease.run_id for lease in ordered],
        [lease.worker_id for lease in ordered],
        [lease.epoch for lease in ordered],
    )


def _settle(batch: list[_Write], seqs: dict[int, int | None]) -> None:
    """Tell each write's sink what became of the events it lent: stored up to a seq, or
    (no seq) not stored, to be written again."""
    for write in batch:
        if write.lent and write.events is not None:
            write.events.settle(write.lent, seqs.get(id(write)))
        write.lent = None


def _failure(write: _Write, exc: BaseException) -> BaseException:
    """What the write's caller hears: the server's own error, a refused fence as the
    ``LeaseLost`` the runtime stops a run on."""
    if isinstance(exc, _Rolledback):
        exc = exc.error
    lease = write.lease
    if isinstance(exc, psycopg.Error) and exc.sqlstate == FENCE_REFUSED and lease is not None:
        refused = LeaseLost(
            f"run {lease.run_id}: checkpoint refused, lease epoch {lease.epoch} is no longer held"
        )
        refused.__cause__ = exc
        return refused
    return exc
