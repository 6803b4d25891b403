"""The SQLite store: the embedded default (``./.outlast/``), one process.

The same contract as Postgres, with the database's write lock in place of row locks:
every multi-statement write runs in ``BEGIN IMMEDIATE``, so seq assignment and lease
checks cannot interleave. Reads never take that lock: they run on a second, read-only
connection, in a deferred transaction that WAL lets proceed while a writer holds the
lock, so a listing or a stream's catch-up never waits for (nor stalls) the event appends
of running runs. Notifications go to the in-process hub after commit. Several processes
on one SQLite file stay correct (fencing and seq are enforced by the database) but only
wake each other by the poll safety net; use Postgres to scale out.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from outlast.errors import LeaseLost, StoreUnavailable
from outlast.store import items
from outlast.store.assistants import AssistantOps
from outlast.store.base import (
    Effect,
    Event,
    EventDraft,
    EventLender,
    HeldRun,
    Lease,
    NewRun,
    Run,
    Store,
    Wait,
    same_request,
)
from outlast.store.event_ops import EventOps
from outlast.store.hub import EVENTS, QUEUE, STATUS, Hub
from outlast.store.ledger_ops import LedgerOps
from outlast.store.lgthreads import LangGraphOps
from outlast.store.outbox_ops import OutboxOps, insert_run_webhooks
from outlast.store.park_ops import ParkOps
from outlast.store.rows import (
    dumps,
    dumps_or_none,
    effect_from_row,
    event_from_row,
    run_from_row,
    wait_from_row,
)
from outlast.store.run_ops import ActivityOps, RunReadOps, ThreadOps
from outlast.store.secrets_ops import SecretsOps
from outlast.store.sqlfiles import migrations, queries
from outlast.store.transition_ops import TransitionOps
from outlast.store.tx import Tx
from outlast.store.wait_ops import WaitOps
from outlast.vocabulary import EventType, RunStatus


def _load(value: Any) -> Any:
    return None if value is None else json.loads(value)


def _when(value: Any) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromtimestamp(value, dt.UTC)


def _started(run: Run) -> dict[str, Any]:
    """The data of a claimed run's ``run.started`` (as the Postgres claim builds it)."""
    return {"status": run.status, "attempt": run.attempts, "worker_id": run.worker_id}


def _run(row: Any) -> Run:
    return run_from_row(row, _load, _when)


async def _claim(
    tx: Tx, worker_id: str, ttl: float, limit: int, run_id: str | None = None
) -> list[Run]:
    """The claim statement (``run_id``: that run only, eager start) and the
    ``run.started`` event of each run it took, which the Postgres statement writes
    itself."""
    rows = await tx.rows("claim", id=run_id, worker_id=worker_id, ttl=ttl, limit=limit)
    runs = sorted((_run(r) for r in rows), key=lambda r: r.pos)
    for run in runs:
        await tx.rows(
            "insert_event",
            run_id=run.id,
            seq=run.last_seq,
            type=EventType.RUN_STARTED,
            data=dumps(_started(run)),
        )
    return runs


async def _connect(
    path: Path, *, autocommit: bool, read_only: bool = False
) -> aiosqlite.Connection:
    # The run store manages its own transactions (BEGIN IMMEDIATE, or a deferred BEGIN
    # for reads); the checkpointer expects the sqlite3 default and commits by itself.
    if autocommit:
        conn = await aiosqlite.connect(path, isolation_level=None)
    else:
        conn = await aiosqlite.connect(path)
    conn.row_factory = aiosqlite.Row
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=NORMAL")
    await conn.execute("PRAGMA busy_timeout=10000")
    await conn.execute("PRAGMA foreign_keys=ON")
    if read_only:
        # A write sent through _reading() by mistake fails at once instead of quietly
        # taking the write lock from inside a read transaction.
        await conn.execute("PRAGMA query_only=ON")
    return conn


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
    OutboxOps,
    SecretsOps,
    LedgerOps,
    Store,
):
    backend = "sqlite"

    def __init__(self, path: Path, checkpoint_path: Path, *, hub: Hub | None = None) -> None:
        self.path = path
        self.checkpoint_path = checkpoint_path
        self.hub = hub or Hub()
        self._q = queries("sqlite")
        self._conn: aiosqlite.Connection | None = None
        self._read_conn: aiosqlite.Connection | None = None
        self._saver_conn: aiosqlite.Connection | None = None
        self._saver: AsyncSqliteSaver | None = None
        # One transaction at a time on each connection: one writer in the process, and
        # one reader (whose transaction, in WAL, does not wait for the writer's).
        self._lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()

    async def open(self) -> None:
        if self._conn is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = await _connect(self.path, autocommit=True)
            self._read_conn = await _connect(self.path, autocommit=True, read_only=True)
            self._saver_conn = await _connect(self.checkpoint_path, autocommit=False)
            items_conn = await _connect(self.checkpoint_path, autocommit=True)
        except Exception as exc:
            raise StoreUnavailable(f"cannot open {self.path}: {exc}") from exc
        self._saver = AsyncSqliteSaver(self._saver_conn)
        self._items = await items.open_sqlite(items_conn)

    async def close(self) -> None:
        if self._items is not None:
            await items.close(self._items)  # and its connection
            self._items = None
        for conn in (self._conn, self._read_conn, self._saver_conn):
            if conn is not None:
                await conn.close()
        self._conn = self._read_conn = self._saver_conn = None
        self._saver = None

    @property
    def conn(self) -> aiosqlite.Connection:
        """The connection that writes (every write of the run store goes through it)."""
        if self._conn is None:
            raise RuntimeError("SqliteStore.open() was not called")
        return self._conn

    @property
    def read_conn(self) -> aiosqlite.Connection:
        """The read-only connection ``_reading()`` uses."""
        if self._read_conn is None:
            raise RuntimeError("SqliteStore.open() was not called")
        return self._read_conn

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            # BEGIN inside the try: a task cancelled while it waits for BEGIN (a client
            # that went away) has still sent it, and must still send the ROLLBACK.
            try:
                await self.conn.execute("BEGIN IMMEDIATE")
                yield self.conn
                await self.conn.execute("COMMIT")
            except BaseException:
                # Also when COMMIT itself fails: never leave the shared connection inside
                # a transaction (there is none if BEGIN itself failed, busy).
                await _rollback(self.conn)
                raise

    async def migrate(self) -> list[str]:
        applied: list[str] = []
        async with self._tx() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS outlast_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
            )
            async with conn.execute("SELECT version FROM outlast_migrations") as cur:
                done = {row[0] for row in await cur.fetchall()}
            for m in migrations("sqlite"):
                if m.version in done:
                    continue
                for statement in _split(m.sql):
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO outlast_migrations VALUES (?, ?, julianday('now'))",
                    (m.version, m.name),
                )
                applied.append(f"{m.version:04d}_{m.name}")
        assert self._saver is not None
        await self._saver.setup()
        await items.setup(self.items)
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
        if self._saver is None:
            raise RuntimeError("SqliteStore.open() was not called")
        return self._saver

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
        )
        if rows:
            await tx.rows("touch_thread", thread_id=new.thread_id, principal=new.principal)
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
            return _run(rows[0]), True
        found = await tx.rows("get_by_key", principal=new.principal, key=new.idempotency_key)
        return same_request(new, _run(found[0])), False

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[Tx]:
        # Deferred: the read transaction starts at the first SELECT and takes no lock a
        # writer waits for; the statements inside all read the same committed state.
        async with self._read_lock:
            conn = self.read_conn
            # BEGIN inside the try, as in _tx: a cancelled reader still ends what it began
            # (aiosqlite runs a statement it was handed even if its caller stops waiting).
            try:
                await conn.execute("BEGIN")
                tx = _SqliteTx(self._q)
                tx.conn = conn
                yield tx
            finally:
                # Nothing to commit; ending it lets WAL checkpoints move past this state.
                await _rollback(conn)

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[Tx]:
        tx = _SqliteTx(self._q)
        async with self._tx() as conn:
            tx.conn = conn
            yield tx
        for channel, key in tx.notes:  # after commit, like NOTIFY
            self.hub.publish(channel, key)

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
        async with self._tx() as conn, conn.execute(self._q["renew"], params) as cur:
            rows = await cur.fetchall()
        return [HeldRun(r["id"], r["lease_epoch"], RunStatus(r["status"])) for r in rows]

    def _lease_params(self, lease: Lease) -> dict[str, Any]:
        return {"run_id": lease.run_id, "worker_id": lease.worker_id, "epoch": lease.epoch}

    async def append(self, lease: Lease, events: Sequence[EventDraft]) -> int:
        if not events:
            raise ValueError("append needs at least one event")
        async with self._tx() as conn:
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
                        "data": dumps(e.data),
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
        async with self._tx() as conn:
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


async def _rollback(conn: aiosqlite.Connection) -> None:
    """End the connection's transaction, if it has one (none when BEGIN failed)."""
    try:
        await conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "no transaction is active" not in str(exc):
            raise


def _split(script: str) -> list[str]:
    """Split a migration into statements (no semicolons inside our literals). A trigger's
    body holds semicolons of its own: SQLite's ``complete_statement`` says where a
    statement really ends."""
    lines = [ln for ln in script.splitlines() if not ln.strip().startswith("--")]
    statements: list[str] = []
    pending = ""
    for piece in "\n".join(lines).split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip().rstrip(";"))
            pending = ""
    if pending.strip(" \n;"):
        statements.append(pending.strip().rstrip(";"))
    return statements


class _SqliteTx:
    """A transaction of the code written once (tx.py): ``BEGIN IMMEDIATE`` on the writing
    connection, or a deferred read transaction on the read-only one. Notifications are
    kept here and published once the transaction has committed."""

    def __init__(self, q: dict[str, str]) -> None:
        self._q = q
        self.conn: aiosqlite.Connection | None = None
        self.notes: list[tuple[str, str]] = []

    async def rows(self, name: str, **params: Any) -> list[Mapping[str, Any]]:
        assert self.conn is not None
        async with self.conn.execute(self._q[name], params) as cur:
            return [dict(row) for row in await cur.fetchall()]

    def encode_json(self, value: Any) -> Any:
        return dumps_or_none(value)

    def decode_json(self, value: Any) -> Any:
        return _load(value)

    def encode_time(self, value: Any) -> Any:
        return None if value is None else value.timestamp()  # unix seconds, REAL

    def wait(self, row: Mapping[str, Any]) -> Wait:
        return wait_from_row(row, _load, _when)

    def run(self, row: Mapping[str, Any]) -> Run:
        return _run(row)

    def effect(self, row: Mapping[str, Any]) -> Effect:
        return effect_from_row(row, _load, _when)

    def event(self, row: Mapping[str, Any]) -> Event:
        return event_from_row(row, _load, _when)

    async def notify(self, channel: str, key: str) -> None:
        self.notes.append((channel, key))
