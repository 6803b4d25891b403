"""Group commit (store/group_commit.py): the checkpoint writes of concurrent runs share
one transaction, a write whose fence is refused fails alone, and the events a write
carries land with it under its own run's seqs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest

from outlast.errors import LeaseLost
from outlast.store import EventDraft, Lease, Lent
from outlast.store.batcher import Statement
from outlast.store.group_commit import GroupCommit
from outlast.store.postgres import PostgresStore
from tests.util import new_run

pytestmark = pytest.mark.postgres

# a row per write, so what each write committed can be counted afterwards
_TABLE = "CREATE TABLE IF NOT EXISTS group_commit_probe (run_id uuid, n int)"
_INSERT = "INSERT INTO group_commit_probe (run_id, n) VALUES (%s, %s)"


async def _leases(store: PostgresStore, count: int) -> list[Lease]:
    for _ in range(count):
        await store.create_run(new_run())
    claimed = await store.claim("w1", 30, count)
    assert len(claimed) == count
    return [Lease(run.id, "w1", run.lease_epoch) for run in claimed]


async def _probe(store: PostgresStore) -> dict[str, int]:
    async with store.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT run_id::text AS r, count(*) AS c FROM group_commit_probe GROUP BY 1"
        )
        return {row["r"]: row["c"] for row in await cur.fetchall()}


def _group(store: PostgresStore) -> GroupCommit:
    group = store._group
    assert group is not None
    return group


async def _prepared(store: PostgresStore) -> None:
    async with store.pool.connection() as conn:
        await conn.execute(_TABLE)
        await conn.execute("TRUNCATE group_commit_probe")


async def test_writes_pending_together_commit_in_one_transaction(pg: PostgresStore) -> None:
    await _prepared(pg)
    leases = await _leases(pg, 7)
    group = _group(pg)
    before = group.writer.batches
    await asyncio.gather(
        *(group.write(lease, [Statement(_INSERT, (lease.run_id, 1))]) for lease in leases)
    )
    # all seven were pending when the idle writer woke: one transaction, not seven
    assert group.writer.batches - before == 1 and group.writer.largest == 7
    assert await _probe(pg) == {lease.run_id: 1 for lease in leases}


async def test_a_refused_fence_fails_its_own_write_only(pg: PostgresStore) -> None:
    await _prepared(pg)
    leases = await _leases(pg, 5)
    stale = Lease(leases[2].run_id, "w1", leases[2].epoch + 1)  # an epoch not held
    writes = [*leases[:2], stale, *leases[3:]]
    outcomes = await asyncio.gather(
        *(pg._group.write(lease, [Statement(_INSERT, (lease.run_id, 1))]) for lease in writes),  # type: ignore[union-attr]
        return_exceptions=True,
    )
    assert [type(o).__name__ for o in outcomes] == [
        "NoneType",
        "NoneType",
        "LeaseLost",
        "NoneType",
        "NoneType",
    ]
    assert isinstance(outcomes[2], LeaseLost) and "no longer held" in str(outcomes[2])
    assert await _probe(pg) == {lease.run_id: 1 for i, lease in enumerate(leases) if i != 2}


class _Lender:
    """The run's side of carried events (runtime/sink.py's lend/settle), as a list."""

    def __init__(self, drafts: Sequence[EventDraft]) -> None:
        self.pending = list(drafts)
        self.settled: list[int | None] = []

    def lend(self) -> Lent | None:
        batch, self.pending = self.pending, []
        return Lent(batch, str(uuid.uuid4())) if batch else None

    def settle(self, lent: Lent, seq: int | None) -> None:
        self.settled.append(seq)
        if seq is None:
            self.pending[:0] = lent.events


async def test_carried_events_land_with_their_write_under_their_runs_seqs(
    pg: PostgresStore,
) -> None:
    await _prepared(pg)
    leases = await _leases(pg, 3)
    lenders = [
        _Lender([EventDraft("custom", {"i": i, "k": k}) for k in range(i + 1)]) for i in range(3)
    ]
    group = _group(pg)
    await asyncio.gather(
        *(
            group.write(lease, [Statement(_INSERT, (lease.run_id, 1))], lender)
            for lease, lender in zip(leases, lenders, strict=True)
        )
    )
    for i, (lease, lender) in enumerate(zip(leases, lenders, strict=True)):
        events = [e for e in await pg.read_events(lease.run_id, 0, 100) if e.type == "custom"]
        assert [e.data for e in events] == [{"i": i, "k": k} for k in range(i + 1)]
        assert lender.settled == [events[-1].seq] and not lender.pending


async def test_a_refused_write_gives_its_carried_events_back(pg: PostgresStore) -> None:
    """The fenced-out write stored none of its events (the sink then fails on them, as
    it does on any refused append); its batch-mate's events are stored."""
    await _prepared(pg)
    good, held = await _leases(pg, 2)
    stale = Lease(held.run_id, "w1", held.epoch + 1)
    lenders = [_Lender([EventDraft("custom", {"who": who})]) for who in ("good", "stale")]
    outcomes = await asyncio.gather(
        _group(pg).write(good, [Statement(_INSERT, (good.run_id, 1))], lenders[0]),
        _group(pg).write(stale, [Statement(_INSERT, (stale.run_id, 1))], lenders[1]),
        return_exceptions=True,
    )
    assert outcomes[0] is None and isinstance(outcomes[1], LeaseLost)
    assert lenders[1].settled[-1] is None and [d.data for d in lenders[1].pending] == [
        {"who": "stale"}
    ]
    assert [e.data for e in await pg.read_events(held.run_id, 0, 100) if e.type == "custom"] == []
    assert lenders[0].settled[-1] is not None
