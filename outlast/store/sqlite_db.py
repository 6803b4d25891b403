"""The SQLite store's database files and the way into them: its connections, the
process's write lock, the read transaction, the ``Tx`` the code written once for both
backends runs on, and the migrations of the run store's file.

Two files: the run store's (runs, events, waits, ...) and the checkpoints' (LangGraph's
saver and item store). The run store's has two connections: one that writes, every write
in ``BEGIN IMMEDIATE`` under an asyncio lock (one writer in the process; the database's
own lock orders the processes), and a read-only one whose deferred transactions WAL lets
proceed while a writer holds the lock, so a read never waits for the event appends of
running runs, nor stalls them. Notifications wait in the ``Tx`` until the commit.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from outlast.store.hub import Hub
from outlast.store.records import Effect, Event, Run, Wait
from outlast.store.rows import (
    dumps_or_none,
    effect_from_row,
    event_from_row,
    run_from_row,
    wait_from_row,
)
from outlast.store.sqlfiles import migrations
from outlast.store.sqlite_errors import mapped
from outlast.store.sqlite_saver import BatchedSqliteSaver


def _load(value: Any) -> Any:
    return None if value is None else json.loads(value)


def _when(value: Any) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromtimestamp(value, dt.UTC)


def run_of(row: Any) -> Run:
    """A run row as SQLite stores it (JSON text, unix seconds)."""
    return run_from_row(row, _load, _when)


async def connect(path: Path, *, autocommit: bool, read_only: bool = False) -> aiosqlite.Connection:
    """A connection to ``path`` in WAL mode that waits up to 10 s for the write lock."""
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


async def _rollback(conn: aiosqlite.Connection) -> None:
    """End the connection's transaction, if it has one (none when BEGIN failed)."""
    try:
        await conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "no transaction is active" not in str(exc):
            raise


class SqliteDb:
    """The connections of one SQLite store, and the locks that give each one transaction
    at a time: one writer in the process, and one reader (whose transaction, in WAL, does
    not wait for the writer's)."""

    def __init__(self, path: Path, checkpoint_path: Path, q: dict[str, str], hub: Hub) -> None:
        self.path = path
        self.checkpoint_path = checkpoint_path
        self._q = q
        self._hub = hub
        self._conn: aiosqlite.Connection | None = None
        self._read_conn: aiosqlite.Connection | None = None
        self._saver_conn: aiosqlite.Connection | None = None
        self.saver: BatchedSqliteSaver | None = None
        self._lock = asyncio.Lock()
        self._read_lock = asyncio.Lock()

    @property
    def opened(self) -> bool:
        return self._conn is not None

    async def open(self) -> None:
        """The writing and reading connections, and the checkpointer's (its own
        transactions, its own file)."""
        self._conn = await connect(self.path, autocommit=True)
        self._read_conn = await connect(self.path, autocommit=True, read_only=True)
        self._saver_conn = await connect(self.checkpoint_path, autocommit=False)
        self.saver = BatchedSqliteSaver(self._saver_conn, self.checkpoint_path)

    async def close(self) -> None:
        if self.saver is not None:
            await self.saver.writer.close()
        for conn in (self._conn, self._read_conn, self._saver_conn):
            if conn is not None:
                await conn.close()
        self._conn = self._read_conn = self._saver_conn = None
        self.saver = None

    @property
    def conn(self) -> aiosqlite.Connection:
        """The connection that writes (every write of the run store goes through it)."""
        if self._conn is None:
            raise RuntimeError("SqliteStore.open() was not called")
        return self._conn

    @property
    def read_conn(self) -> aiosqlite.Connection:
        """The read-only connection ``reading()`` uses."""
        if self._read_conn is None:
            raise RuntimeError("SqliteStore.open() was not called")
        return self._read_conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writing connection in ``BEGIN IMMEDIATE``: committed when the block ends,
        rolled back if it raises."""
        # A full disk (met at COMMIT, mostly) is raised as StoreFull, once rolled back.
        async with self._lock:
            with mapped(self.path):
                # BEGIN inside the try: a task cancelled while it waits for BEGIN (a
                # client that went away) has still sent it, and must still ROLLBACK.
                try:
                    await self.conn.execute("BEGIN IMMEDIATE")
                    yield self.conn
                    await self.conn.execute("COMMIT")
                except BaseException:
                    # Also when COMMIT itself fails: never leave the shared connection
                    # inside a transaction (there is none if BEGIN itself failed, busy).
                    await _rollback(self.conn)
                    raise

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[SqliteTx]:
        """A deferred read transaction on the read-only connection."""
        # Deferred: the read transaction starts at the first SELECT and takes no lock a
        # writer waits for; the statements inside all read the same committed state.
        async with self._read_lock:
            conn = self.read_conn
            # BEGIN inside the try, as in transaction(): a cancelled reader still ends
            # what it began (aiosqlite runs a statement it was handed even if its caller
            # stops waiting).
            try:
                with mapped(self.path):
                    await conn.execute("BEGIN")
                    yield SqliteTx(self._q, conn)
            finally:
                # Nothing to commit; ending it lets WAL checkpoints move past this state.
                await _rollback(conn)

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[SqliteTx]:
        """A write transaction for the code written once; its notifications are
        published on the hub once it has committed, like a NOTIFY."""
        async with self.transaction() as conn:
            tx = SqliteTx(self._q, conn)
            yield tx
        for channel, key in tx.notes:
            self._hub.publish(channel, key)

    async def migrate(self) -> list[str]:
        """Apply the numbered migrations not applied yet, under the write lock; their
        names."""
        applied: list[str] = []
        async with self.transaction() as conn:
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
        return applied


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


class SqliteTx:
    """A transaction of the code written once (``tx.py``): ``BEGIN IMMEDIATE`` on the
    writing connection, or a deferred read transaction on the read-only one.
    Notifications are kept here and published once the transaction has committed."""

    def __init__(self, q: dict[str, str], conn: aiosqlite.Connection) -> None:
        self._q = q
        self.conn = conn
        self.notes: list[tuple[str, str]] = []

    async def rows(self, name: str, **params: Any) -> list[Mapping[str, Any]]:
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
        return run_of(row)

    def effect(self, row: Mapping[str, Any]) -> Effect:
        return effect_from_row(row, _load, _when)

    def event(self, row: Mapping[str, Any]) -> Event:
        return event_from_row(row, _load, _when)

    async def notify(self, channel: str, key: str) -> None:
        self.notes.append((channel, key))
