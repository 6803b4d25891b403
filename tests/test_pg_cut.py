"""The database cuts a run's connection in the middle of a checkpoint write.

Postgres only, and not ``serial``: the cut is ``pg_terminate_backend`` on the one backend
serving that write, found by its pid and only within this test session's own database,
so nothing else on the server (other tests, other engineers' sessions) loses a
connection. The whole-cluster restart is ``tests/test_db_faults.py``.

There is no SQLite analogue: the embedded store is a file opened inside the worker's
own process, so there is no connection that can die while the worker lives on. A write
there fails with the process (``tests/test_crash.py`` kills workers at fault points) or
with the disk (full, read-only), which is not a transient fault a retry rides out.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from outlast.store.postgres import PostgresStore
from outlast.vocabulary import EventType, RunStatus
from tests.harness import make_settings, post_run, serve, wait_result
from tests.procs import all_events, assert_exact_log

pytestmark = pytest.mark.postgres


class _CutNextWrite:
    """A saver's pool, passed through, except that while ``armed`` the next connection
    it hands out has its server backend terminated first: the write that follows goes to
    a connection the server has really closed, as after a failover or an idle kill."""

    def __init__(self, pool: Any, db_url: str) -> None:
        self._pool = pool
        self._db_url = db_url
        self.armed = False
        self.cut: list[int] = []  # the backends terminated

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    @contextlib.asynccontextmanager
    async def connection(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with self._pool.connection(*args, **kwargs) as conn:
            if self.armed:
                self.armed = False
                await self._terminate(conn.info.backend_pid)
            yield conn

    async def _terminate(self, pid: int) -> None:
        async with await psycopg.AsyncConnection.connect(self._db_url, autocommit=True) as admin:
            # The timeout makes the call wait until the backend is gone, so the write
            # cannot slip through before the cut.
            cur = await admin.execute(
                "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity"
                " WHERE pid = %s AND datname = current_database()",
                (pid,),
            )
            row = await cur.fetchone()
        assert row is not None and row[0] is True, f"backend {pid} was not terminated"
        self.cut.append(pid)


async def test_a_checkpoint_write_cut_by_the_database_is_sent_again_in_place(
    pg: PostgresStore, pg_url: str
) -> None:
    """The run is not failed (the fault is not its own), nothing half-written shows, and
    the write goes again on a new connection (store/outage.py): the run is neither given
    back nor requeued, and no step runs twice."""
    real = pg.checkpointer
    cutters: list[_CutNextWrite] = []

    def cut_third_write(lease: Any = None, events: Any = None) -> Any:
        saver = real(lease, events)
        # the checkpoint writes of every run go out through the store's group commit
        if not cutters:
            cutters.append(_CutNextWrite(saver.group.pool, pg_url))
            saver.group.pool = cutters[0]
        pool = cutters[0]
        original = saver.aput
        count = {"n": 0}

        async def aput(*args: Any, **kwargs: Any) -> Any:
            count["n"] += 1
            if count["n"] == 3 and not any(c.cut for c in cutters):  # mid-run, once
                pool.armed = True
            return await original(*args, **kwargs)

        saver.aput = aput
        return saver

    pg.checkpointer = cut_third_write  # type: ignore[method-assign]
    settings = make_settings(worker_lease_ttl=1.0, worker_heartbeat=0.3, reaper_interval=0.3)
    async with serve(pg, settings) as srv:
        run = await post_run(srv.client, graph="steps", input={})
        final = await wait_result(srv.client, run["id"])
    assert [c.cut for c in cutters if c.cut] != [], "no checkpoint write was cut"
    assert final["status"] == RunStatus.COMPLETED and final["attempts"] == 1, final
    events = await all_events(pg, run["id"])
    assert_exact_log(events)
    types = [e.type for e in events]
    for stopped in (EventType.RUN_FAILED, EventType.RUN_REQUEUED, EventType.RUN_RELEASED):
        assert stopped not in types, types
    assert types.count(EventType.RUN_STARTED) == 1, types
    nodes = [e.data["node"] for e in events if e.type == EventType.NODE_UPDATED]
    assert len(nodes) == len(set(nodes)) >= 3, nodes  # every step once
