"""SQLite reads never take the file's write lock.

SQLite has one write lock for the whole file. A read that took it (``BEGIN IMMEDIATE``)
would queue behind every writer, and every writer behind it. Here another connection
holds the write lock for the whole test and the store's writing connection is told not
to wait for it at all (``busy_timeout=0``): a read routed through the write lock fails
with "database is locked" at once, a read that does not take it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from outlast.store import Lease, LgRun, RunStatus, WaitSpec
from outlast.store.crons import CronQuery
from outlast.store.sqlite import SqliteStore
from outlast.vocabulary import WaitKind, WaitStatus
from tests.harness import open_sqlite
from tests.util import new_cron, new_run


@dataclass(frozen=True)
class World:
    """What the reads look at: a waiting run (a human wait and a timer), its effect, its
    thread, a LangGraph run on another thread, an assistant, a cron."""

    run_id: str
    thread_id: str
    wait_id: str
    lg_id: str
    lg_thread: str
    assistant_id: str
    cron_id: str


async def _build(store: SqliteStore) -> World:
    new = new_run(key="read-key")
    run, _ = await store.create_run(new)
    (claimed,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", claimed.lease_epoch)
    await store.effect_begin(run.id, "e1", "send", "h", {"to": "x"}, False)
    specs = [
        WaitSpec(interrupt_id="i1", kind=WaitKind.HUMAN, prompt="ok?"),
        WaitSpec(interrupt_id="i2", kind=WaitKind.TIMER, wake_in=3600.0),
    ]
    assert await store.park(lease, specs, lookback=0) == RunStatus.WAITING
    human = [w for w in await store.list_waits(run.id) if w.kind == WaitKind.HUMAN]
    lg_new = new_run()
    lg = LgRun(
        id=lg_new.id,
        run_id=lg_new.id,
        thread_id=lg_new.thread_id,
        principal="",
        assistant_id="a1",
        from_seq=0,
        kwargs={"input": {}},
        metadata={},
        multitask_strategy="enqueue",
        created_at=dt.datetime.now(dt.UTC),
    )
    await store.lg_create_run(lg_new, lg, strategy="enqueue", supersede_reason="")
    await store.create_assistant(assistant_id="a1", graph_id="steps", name="one")
    cron = await store.create_cron(new_cron())
    return World(run.id, new.thread_id, human[0].id, lg.id, lg_new.thread_id, "a1", cron.cron_id)


Read = Callable[[SqliteStore, World], Awaitable[bool]]


async def _get_wait(s: SqliteStore, w: World) -> bool:
    return (await s.get_wait(w.run_id, w.wait_id)).status == WaitStatus.OPEN


async def _list_waits(s: SqliteStore, w: World) -> bool:
    return len(await s.list_waits(w.run_id, WaitStatus.OPEN)) == 2


async def _open_waits(s: SqliteStore, w: World) -> bool:
    return len((await s.open_waits([w.run_id]))[w.run_id]) == 2


async def _next_due_in(s: SqliteStore, w: World) -> bool:
    due = await s.next_due_in()
    return due is not None and due > 0


async def _latest_run(s: SqliteStore, w: World) -> bool:
    latest = await s.latest_run(w.thread_id)
    return latest is not None and latest.id == w.run_id


async def _get_run(s: SqliteStore, w: World) -> bool:
    run = await s.get_run(w.run_id)
    return run is not None and run.status == RunStatus.WAITING


async def _list_runs(s: SqliteStore, w: World) -> bool:
    runs = await s.list_runs(thread_id=w.thread_id, status=None, limit=10, before=None)
    return [r.id for r in runs] == [w.run_id]


async def _by_key(s: SqliteStore, w: World) -> bool:
    run = await s.get_run_by_key("", "read-key")
    return run is not None and run.id == w.run_id


async def _count_active(s: SqliteStore, w: World) -> bool:
    return await s.count_active("") == 1  # the LangGraph run, queued


async def _read_events(s: SqliteStore, w: World) -> bool:
    return len(await s.read_events(w.run_id, 0, 100)) > 3


async def _first_retained(s: SqliteStore, w: World) -> bool:
    return await s.first_retained_seq(w.run_id) == 1


async def _by_status(s: SqliteStore, w: World) -> bool:
    return await s.count_runs_by_status() == {"waiting": 1, "queued": 1}


async def _effects(s: SqliteStore, w: World) -> bool:
    return [e.key for e in await s.list_effects(w.run_id)] == ["e1"]


async def _threads(s: SqliteStore, w: World) -> bool:
    return [t.thread_id for t in await s.lg_threads(thread_id=w.thread_id)] == [w.thread_id]


async def _lg_run(s: SqliteStore, w: World) -> bool:
    lg = await s.lg_get_run(w.lg_id)
    return lg is not None and lg.thread_id == w.lg_thread


async def _lg_of_thread(s: SqliteStore, w: World) -> bool:
    return [r.id for r in await s.lg_runs_of_thread(w.lg_thread)] == [w.lg_id]


async def _lg_of_run(s: SqliteStore, w: World) -> bool:
    return [r.id for r in await s.lg_runs_of_run(w.lg_id)] == [w.lg_id]


async def _assistant(s: SqliteStore, w: World) -> bool:
    return await s.get_assistant(w.assistant_id) is not None


async def _search_assistants(s: SqliteStore, w: World) -> bool:
    found, total = await s.search_assistants()
    return total == 1 and [a.assistant_id for a in found] == [w.assistant_id]


async def _count_assistants(s: SqliteStore, w: World) -> bool:
    return await s.count_assistants(graph_id="steps") == 1


async def _versions(s: SqliteStore, w: World) -> bool:
    return [a.version for a in await s.list_assistant_versions(w.assistant_id)] == [1]


async def _cron(s: SqliteStore, w: World) -> bool:
    return await s.get_cron(w.cron_id) is not None


async def _search_crons(s: SqliteStore, w: World) -> bool:
    return [c.cron_id for c in await s.search_crons(CronQuery())] == [w.cron_id]


async def _count_crons(s: SqliteStore, w: World) -> bool:
    return await s.count_crons(CronQuery()) == 1


async def _next_cron_in(s: SqliteStore, w: World) -> bool:
    due = await s.next_cron_in()
    return due is not None and due > 0


async def _ping(s: SqliteStore, w: World) -> bool:
    await s.ping()
    return True


READS: dict[str, Read] = {
    "get_wait": _get_wait,
    "list_waits": _list_waits,
    "open_waits": _open_waits,
    "next_due_in": _next_due_in,
    "latest_run": _latest_run,
    "get_run": _get_run,
    "list_runs": _list_runs,
    "get_run_by_key": _by_key,
    "count_active": _count_active,
    "read_events": _read_events,
    "first_retained_seq": _first_retained,
    "count_runs_by_status": _by_status,
    "list_effects": _effects,
    "lg_threads": _threads,
    "lg_get_run": _lg_run,
    "lg_runs_of_thread": _lg_of_thread,
    "lg_runs_of_run": _lg_of_run,
    "get_assistant": _assistant,
    "search_assistants": _search_assistants,
    "count_assistants": _count_assistants,
    "list_assistant_versions": _versions,
    "get_cron": _cron,
    "search_crons": _search_crons,
    "count_crons": _count_crons,
    "next_cron_in": _next_cron_in,
    "ping": _ping,
}


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    store = await open_sqlite(tmp_path)
    try:
        yield store
    finally:
        await store.close()


@contextlib.contextmanager
def write_lock_held_elsewhere(store: SqliteStore) -> Iterator[sqlite3.Connection]:
    """Another connection holds the file's write lock until the block ends."""
    blocker = sqlite3.connect(store.path, isolation_level=None, timeout=0)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        blocker.execute("UPDATE outlast_runs SET metadata = metadata")  # a real write
        yield blocker
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


@pytest.mark.parametrize("name", sorted(READS))
async def test_a_read_answers_while_another_connection_holds_the_write_lock(
    sqlite_store: SqliteStore, name: str
) -> None:
    world = await _build(sqlite_store)
    await sqlite_store.conn.execute("PRAGMA busy_timeout=0")  # the writer: never wait
    with write_lock_held_elsewhere(sqlite_store):
        # the lock is really held: a write fails at once
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            await sqlite_store.prune_events(world.run_id, 0)
        assert await READS[name](sqlite_store, world)


async def test_a_read_sees_one_state_throughout(sqlite_store: SqliteStore) -> None:
    """The statements of one read see the same committed state, even if a write commits
    between them (search_assistants' page and its total, for one, must agree)."""
    await sqlite_store.create_assistant(assistant_id="a1", graph_id="steps", name="one")
    async with sqlite_store._reading() as tx:
        before = (
            await tx.rows(
                "a_count", principal="", metadata=None, graph_id=None, assistant_name=None
            )
        )[0]["n"]
        await sqlite_store.create_assistant(assistant_id="a2", graph_id="steps", name="two")
        after = (
            await tx.rows(
                "a_count", principal="", metadata=None, graph_id=None, assistant_name=None
            )
        )[0]["n"]
    assert before == after == 1
    assert await sqlite_store.count_assistants() == 2  # committed, seen by the next read


async def test_a_write_sent_through_the_read_path_is_refused(sqlite_store: SqliteStore) -> None:
    run, _ = await sqlite_store.create_run(new_run())
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        async with sqlite_store._reading() as tx:
            await tx.rows("prune_events", run_id=run.id, upto=1)
    assert len(await sqlite_store.read_events(run.id, 0, 10)) == 1


async def test_a_read_or_write_cancelled_while_it_begins_leaves_no_transaction_open(
    sqlite_store: SqliteStore,
) -> None:
    """A client that goes away cancels its request mid-statement; aiosqlite still runs
    the BEGIN it was handed. The next read and write must find their connection clean
    (found by the stream-cuts test: every later read failed with "cannot start a
    transaction within a transaction")."""
    run, _ = await sqlite_store.create_run(new_run())
    for start in (sqlite_store.get_run(run.id), sqlite_store.prune_events(run.id, 0)):
        task = asyncio.create_task(start)
        await asyncio.sleep(0)  # it runs up to its BEGIN, handed to aiosqlite's thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    again = await sqlite_store.get_run(run.id)
    assert again is not None and again.id == run.id
    assert await sqlite_store.prune_events(run.id, 0) == 0
