"""A write the database failed is sent again in place (store/outage.py), and a lease that
ran out while the database was down is not reaped before its holder could renew it.

The end-to-end proofs are elsewhere: a checkpoint write cut by the server
(``tests/test_pg_cut.py``) and a whole Postgres restart (``tests/test_db_faults.py``),
where no step of a run runs again; these tests pin the parts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from outlast.errors import LeaseLost
from outlast.retry import RetryPolicy
from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, Lease, outage
from outlast.store.outage import ride_out
from outlast.store.postgres import PostgresStore
from tests.util import new_run


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits of a millisecond: the tests count attempts, not seconds."""
    monkeypatch.setattr(outage, "OUTAGE", RetryPolicy(initial_interval=0.001))


class _Flaky:
    """An event store whose first ``failures`` appends fail as a restarting server's do."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls: list[tuple[list[str], str | None]] = []

    async def append(self, lease: Lease, drafts: list[EventDraft], token: str | None = None) -> int:
        self.calls.append(([d.type for d in drafts], token))
        if len(self.calls) <= self.failures:
            raise self.error
        return len(drafts)


async def test_the_sink_rides_out_a_restart_with_the_same_batch_and_token() -> None:
    # more failures than the five attempts the sink used to allow
    store = _Flaky(12, psycopg.OperationalError("the database system is shutting down"))
    errors: list[BaseException] = []
    sink = EventSink(store, Lease("r", "w", 1), errors.append)  # type: ignore[arg-type]
    sink.put(EventDraft("custom", {"n": 1}))
    await sink.flush()
    await sink.close()
    assert errors == [] and sink.last_seq == 1
    assert len(store.calls) == 13
    assert len({token for _, token in store.calls}) == 1  # one batch, one token throughout
    assert {tuple(types) for types, _ in store.calls} == {("custom",)}


async def test_an_error_of_the_caller_is_not_ridden_out() -> None:
    store = _Flaky(100, ValueError("not a database error"))
    errors: list[BaseException] = []
    sink = EventSink(store, Lease("r", "w", 1), errors.append)  # type: ignore[arg-type]
    sink.put(EventDraft("custom", {}))
    with pytest.raises(ValueError):
        await sink.flush()
    await sink.close()
    assert len(store.calls) == 5 and len(errors) == 1


async def test_riding_out_ends_at_once_on_a_lost_lease() -> None:
    calls = 0

    async def refused() -> None:
        nonlocal calls
        calls += 1
        raise LeaseLost("taken over")

    with pytest.raises(LeaseLost):
        await ride_out(refused, "a write")
    assert calls == 1


async def test_riding_out_gives_up_after_its_patience() -> None:
    calls = 0

    async def down() -> None:
        nonlocal calls
        calls += 1
        raise psycopg.OperationalError("connection refused")

    with pytest.raises(psycopg.OperationalError):
        await ride_out(down, "a write", patience=0.05)
    assert calls > 1  # tried again meanwhile, then gave up


@pytest.mark.postgres
async def test_a_lease_is_not_reaped_within_grace_of_the_servers_start(
    pg: PostgresStore,
) -> None:
    run, _ = await pg.create_run(new_run())
    (claimed,) = await pg.claim("w", -1, 1)  # a lease already past, on database time
    assert claimed.id == run.id
    async with pg.pool.connection() as conn:
        cur = await conn.execute("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")
        row: Any = await cur.fetchone()
    up = float(next(iter(row.values())))
    # as if the server had started a moment ago: its leases get their grace
    assert await pg.reap(grace=up + 3600) == []
    assert (await pg.get_run(run.id)).status == "running"  # type: ignore[union-attr]
    # long after its start, an expired lease is a dead worker's
    assert [r.run_id for r in await pg.reap(grace=max(0.0, up - 60))] == [run.id]


async def test_a_ride_out_is_cancelled_by_a_stop() -> None:
    async def down() -> None:
        raise psycopg.OperationalError("connection refused")

    task = asyncio.create_task(ride_out(down, "a write", patience=60))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
