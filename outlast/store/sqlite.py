"""The SQLite store: the embedded default (``./.outlast/``), one process.

The same contract as Postgres, with the database's write lock in place of row locks:
every multi-statement write runs in ``BEGIN IMMEDIATE``, so seq assignment and lease
checks cannot interleave. Reads never take that lock: they run on a second, read-only
connection, in a deferred transaction that WAL lets proceed while a writer holds the
lock, so a listing or a stream's catch-up never waits for (nor stalls) the event appends
of running runs. Notifications go to the in-process hub after commit. Several processes
on one SQLite file stay correct (fencing and seq are enforced by the database) but only
wake each other by the poll safety net; use Postgres to scale out.

The connections, the write lock, the read transaction and the migrations are
``sqlite_db.py``'s; what is here is the store's hot path (accept, claim, renew, append,
finish), written for SQLite, with the mixins written once for both backends.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from outlast.errors import LeaseLost, StoreUnavailable
from outlast.store import item_backends
from outlast.store.assistants import AssistantOps
from outlast.store.base import (
    EventDraft,
    EventLender,
    HeldRun,
    Lease,
    NewRun,
    Run,
    Store,
    same_request,
    thread_refused,
)
from outlast.store.cron_ops import CronOps
from outlast.store.event_ops import EventOps
from outlast.store.hub import EVENTS, QUEUE, STATUS, THREADS, Hub
from outlast.store.ledger_ops import LedgerOps
from outlast.store.lgthreads import LangGraphOps
from outlast.store.options import StoreOptions
from outlast.store.outbox_ops import OutboxOps, insert_run_webhooks
from outlast.store.park_ops import ParkOps
from outlast.store.rows import dumps, dumps_or_none
from outlast.store.run_ops import ActivityOps, RunReadOps, ThreadOps
from outlast.store.secrets_ops import SecretsOps
from outlast.store.sqlfiles import queries
from outlast.store.sqlite_db import SqliteDb, connect, run_of
from outlast.store.sweeps import SweepOps
from outlast.store.transition_ops import TransitionOps
from outlast.store.tx import Tx
from outlast.store.wait_ops import WaitOps
from outlast.vocabulary import EventType, RunStatus


def _started(run: Run) -> dict[str, Any]:
    """The data of a claimed run's ``run.started`` (as the Postgres claim builds it)."""
    return {
        "status": run.status,
        "attempt": run.attempts,
        "worker_id": run.worker_id,
        "epoch": run.lease_epoch,
    }


async def _claim(
    tx: Tx, worker_id: str, ttl: float, limit: int, run_id: str | None = None
) -> list[Run]:
    """The claim statement (``run_id``: that run only, eager start) and the
    ``run.started`` event of each run it took, which the Postgres statement writes
    itself."""
    rows = await tx.rows("claim", id=run_id, worker_id=worker_id, ttl=ttl, limit=limit)
    runs = sorted((run_of(r) for r in rows), key=lambda r: r.pos)
    for run in runs:
        await tx.rows(
            "insert_event",
            run_id=run.id,
            seq=run.last_seq,
            type=EventType.RUN_STARTED,
            data=dumps(_started(run)),
        )
    return runs


class SqliteStore(
    RunReadOps,
    EventOps,
    WaitOps,
    ParkOps,
    ThreadOps,
    ActivityOps,
    TransitionOps,
    AssistantOps,
    LangGraphOps,
    CronOps,
    OutboxOps,
    SecretsOps,
    LedgerOps,
    SweepOps,
    Store,
):
    backend = "sqlite"

    def __init__(
        self,
        path: Path,
        checkpoint_path: Path,
        *,
        hub: Hub | None = None,
        options: StoreOptions | None = None,
    ) -> None:
        self.path = path
        self.options = options or StoreOptions()
        self.checkpoint_path = checkpoint_path
        self.hub = hub or Hub()
        self._q = queries("sqlite")
        self._db = SqliteDb(path, checkpoint_path, self._q, self.hub)

    async def open(self) -> None:
        if self._db.opened:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            await self._db.open()
            items_conn = await connect(self.checkpoint_path, autocommit=True)
        except Exception as exc:
            raise StoreUnavailable(f"cannot open {self.path}: {exc}") from exc
        self._items = await item_backends.open_sqlite(
            items_conn, self.options, self.checkpoint_path
        )

    async def close(self) -> None:
        if self._items is not None:
            await item_backends.close(self._items)  # and its connection
            self._items = None
        await self._db.close()

    @property
    def conn(self) -> aiosqlite.Connection:
        """The connection that writes (every write of the run store goes through it)."""
        return self._db.conn

    async def migrate(self) -> list[str]:
        applied = await self._db.migrate()
        await self.checkpointer().setup()
        await item_backends.setup(self.items)
        return applied

    async def ping(self) -> None:
        try:
            await self.first_retained_seq("")
        except Exception as exc:
            raise StoreUnavailable(str(exc)) from exc

    def checkpointer(
        self, lease: Lease | None = None, events: EventLender | None = None
    ) -> AsyncSqliteSaver:
        """One saver for the process. Not fenced: checkpoints live in another file, so no
        transaction can cover both; on the single-process embedded store the worker
        itself stops a run whose lease it lost (see ARCHITECTURE.md)."""
        if self._db.saver is None:
            raise RuntimeError("SqliteStore.open() was not called")
        return self._db.saver

    async def _event(
        self, conn: aiosqlite.Connection, run_id: str, seq: int, type_: str, data: dict[str, Any]
    ) -> None:
        await conn.execute(
            self._q["insert_event"],
            {"run_id": run_id, "seq": seq, "type": type_, "data": dumps(data)},
        )

    # -- acceptance and reads ----------------------------------------------------------

    async def create_run(self, new: NewRun) -> tuple[Run, bool]:
        async with self._writing() as tx:
            return await self._insert_run(tx, new)

    async def _insert_run(self, tx: Tx, new: NewRun) -> tuple[Run, bool]:
        rows = await tx.rows(
            "insert_run",
            id=new.id,
            principal=new.principal,
            thread_id=new.thread_id,
            graph=new.graph,
            input=dumps(new.input),
            config=dumps(new.config),
            metadata=dumps(new.metadata),
            budget=dumps_or_none(new.budget),
            idempotency_key=new.idempotency_key,
            fingerprint=new.fingerprint,
            max_attempts=new.max_attempts,
            options=dumps_or_none(new.options),
            thread_owner=new.expected_owner,
        )
        if rows:
            await tx.rows(
                "touch_thread",
                thread_id=new.thread_id,
                principal=new.principal,
                metadata=dumps(new.thread_metadata),
                thread_ttl=self.options.thread_ttl.default_minutes,
                thread_ttl_strategy=self.options.thread_ttl.strategy,
            )
            if new.thread_id is not None:
                await tx.notify(THREADS, new.thread_id)
            await insert_run_webhooks(tx, new)
            await tx.rows(
                "insert_event",
                run_id=new.id,
                seq=1,
                type=EventType.RUN_CREATED,
                data=dumps(
                    {"status": RunStatus.QUEUED, "graph": new.graph, "thread_id": new.thread_id}
                ),
            )
            if new.claim_for is not None:  # eager start: the write transaction is the lock
                claim = new.claim_for
                claimed = await _claim(tx, claim.worker_id, claim.ttl, 1, new.id)
                if claimed:
                    return claimed[0], True
            await tx.notify(QUEUE, new.id)
            return run_of(rows[0]), True
        found = await tx.rows("get_by_key", principal=new.principal, key=new.idempotency_key)
        if not found:  # no replay: the insert refused the thread
            raise thread_refused(new.thread_id)
        return same_request(new, run_of(found[0])), False

    def _reading(self) -> AbstractAsyncContextManager[Tx]:
        return self._db.reading()

    def _writing(self) -> AbstractAsyncContextManager[Tx]:
        return self._db.writing()

    # -- the worker side ---------------------------------------------------------------

    async def claim(self, worker_id: str, ttl: float, limit: int) -> list[Run]:
        async with self._writing() as tx:
            runs = await _claim(tx, worker_id, ttl, limit)
            for run in runs:
                await tx.notify(EVENTS, run.id)
        return runs

    async def renew(
        self, worker_id: str, ttl: float, run_ids: Sequence[str] | None = None
    ) -> list[HeldRun]:
        ids = json.dumps(list(run_ids)) if run_ids is not None else None
        params = {"worker_id": worker_id, "ttl": ttl, "ids": ids}
        async with self._db.transaction() as conn, conn.execute(self._q["renew"], params) as cur:
            rows = await cur.fetchall()
        return [HeldRun(r["id"], r["lease_epoch"], RunStatus(r["status"])) for r in rows]

    def _lease_params(self, lease: Lease) -> dict[str, Any]:
        return {"run_id": lease.run_id, "worker_id": lease.worker_id, "epoch": lease.epoch}

    async def append(
        self, lease: Lease, events: Sequence[EventDraft], token: str | None = None
    ) -> int:
        # ``token`` is not needed here: the commit happens in this process, and one that
        # raised did not happen (the transaction rolled back).
        if not events:
            raise ValueError("append needs at least one event")
        async with self._db.transaction() as conn:
            async with conn.execute(
                self._q["bump_seq"], {**self._lease_params(lease), "n": len(events)}
            ) as cur:
                row = await cur.fetchone()
            if row is None:
                raise LeaseLost.of(lease.run_id, lease.epoch)
            last: int = row["last_seq"]
            first = last - len(events) + 1
            await conn.executemany(
                self._q["insert_event"],
                [
                    {
                        "run_id": lease.run_id,
                        "seq": first + i,
                        "type": e.type,
                        "data": e.encoded or dumps(e.data),
                    }
                    for i, e in enumerate(events)
                ],
            )
        self.hub.publish(EVENTS, lease.run_id)
        return last

    async def finish(
        self,
        lease: Lease,
        status: RunStatus,
        event: EventDraft,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
    ) -> int:
        params = {
            **self._lease_params(lease),
            "status": status.value,
            "result": dumps_or_none(result),
            "error": dumps_or_none(error),
        }
        async with self._db.transaction() as conn:
            async with conn.execute(self._q["finish"], params) as cur:
                row = await cur.fetchone()
            if row is None:
                raise LeaseLost.of(lease.run_id, lease.epoch)
            seq: int = row["last_seq"]
            await self._event(conn, lease.run_id, seq, event.type, event.data)
            async with conn.execute(self._q["w_settle"], {"run_id": lease.run_id}) as cur:
                await cur.fetchall()
        self.hub.publish(EVENTS, lease.run_id)
        self.hub.publish(STATUS, lease.run_id)
        # the queue hears of it only if the thread has a run queued behind (queries.sql)
        if row["successor"]:
            self.hub.publish(QUEUE, lease.run_id)
        return seq
