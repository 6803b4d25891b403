"""The store contract, run against every backend (the conformance suite)."""

from __future__ import annotations

import asyncio

import pytest

from outlast.errors import IdempotencyKeyReused, LeaseLost
from outlast.store import EventDraft, Lease, ListCursor, RunStatus, Store
from tests.util import new_run


async def test_create_writes_run_and_first_event(store: Store) -> None:
    run, created = await store.create_run(new_run())
    assert created and run.status == RunStatus.QUEUED and run.last_seq == 1
    events = await store.read_events(run.id, 0, 100)
    assert [(e.seq, e.type) for e in events] == [(1, "run.created")]
    again = await store.get_run(run.id)
    assert again is not None and again.fingerprint == run.fingerprint


async def test_idempotency_same_body_same_run(store: Store) -> None:
    first, created = await store.create_run(new_run(key="k1"))
    second, created2 = await store.create_run(new_run(key="k1"))
    assert created and not created2 and second.id == first.id


async def test_idempotency_other_body_refused_and_writes_nothing(store: Store) -> None:
    first, _ = await store.create_run(new_run(key="k2", input={"n": 1}))
    with pytest.raises(IdempotencyKeyReused):
        await store.create_run(new_run(key="k2", input={"n": 2}))
    runs = await store.list_runs(thread_id=None, status=None, limit=10, before=None)
    assert [r.id for r in runs] == [first.id]


async def test_concurrent_same_key_makes_one_run(store: Store) -> None:
    results = await asyncio.gather(*(store.create_run(new_run(key="same")) for _ in range(50)))
    assert len({r.id for r, _ in results}) == 1
    assert sum(created for _, created in results) == 1


async def test_claim_is_exclusive_and_ordered(store: Store) -> None:
    ids = [(await store.create_run(new_run()))[0].id for _ in range(5)]
    a, b = await asyncio.gather(store.claim("wa", 30, 3), store.claim("wb", 30, 3))
    got = [r.id for r in a] + [r.id for r in b]
    assert sorted(got) == sorted(ids) and len(set(got)) == 5
    first = a if a and a[0].id == ids[0] else b
    assert first[0].id == ids[0]
    for run in a + b:
        assert run.status == RunStatus.RUNNING and run.attempts == 1 and run.lease_epoch == 1
        events = await store.read_events(run.id, 0, 10)
        assert [e.type for e in events] == ["run.created", "run.started"]
    assert await store.claim("wc", 30, 10) == []


async def test_append_assigns_consecutive_seqs_under_concurrency(store: Store) -> None:
    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", claimed.lease_epoch)
    await asyncio.gather(
        *(
            store.append(lease, [EventDraft("x", {"i": i}), EventDraft("y", {"i": i})])
            for i in range(20)
        )
    )
    events = await store.read_events(run.id, 0, 1000)
    assert [e.seq for e in events] == list(range(1, 43))
    # each batch stays contiguous
    for i in range(2, 42, 2):
        assert events[i].type == "x" and events[i + 1].type == "y"
        assert events[i].data == events[i + 1].data


async def test_fencing_rejects_a_taken_over_worker(store: Store) -> None:
    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("old", 0.01, 1)
    old = Lease(run.id, "old", claimed.lease_epoch)
    await asyncio.sleep(0.05)  # let the 10 ms lease pass on database time
    reaped = await store.reap()
    assert [(r.run_id, r.status) for r in reaped] == [(run.id, RunStatus.QUEUED)]
    # the old worker is fenced even before anyone claims again
    with pytest.raises(LeaseLost):
        await store.append(old, [EventDraft("late", {})])
    (again,) = await store.claim("new", 30, 1)
    assert again.attempts == 2 and again.lease_epoch > old.epoch
    with pytest.raises(LeaseLost):
        await store.append(old, [EventDraft("late", {})])
    with pytest.raises(LeaseLost):
        await store.finish(old, RunStatus.COMPLETED, EventDraft("run.completed", {}))
    with pytest.raises(LeaseLost):
        await store.release(old, "shutdown")
    assert old.run_id not in {h.run_id for h in await store.renew("old", 30)}
    new = Lease(run.id, "new", again.lease_epoch)
    seq = await store.finish(
        new, RunStatus.COMPLETED, EventDraft("run.completed", {}), result={"ok": True}
    )
    events = await store.read_events(run.id, 0, 100)
    assert [e.seq for e in events] == list(range(1, seq + 1))
    assert "late" not in {e.type for e in events}
    final = await store.get_run(run.id)
    assert (
        final is not None and final.status == RunStatus.COMPLETED and final.result == {"ok": True}
    )


async def test_reaper_fails_after_max_attempts(store: Store) -> None:
    run, _ = await store.create_run(new_run(max_attempts=1))
    await store.claim("w", 0.01, 1)
    await asyncio.sleep(0.05)
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.FAILED
    final = await store.get_run(run.id)
    assert final is not None and final.status == RunStatus.FAILED
    assert final.error is not None and final.error["type"] == "worker_lost"
    events = await store.read_events(run.id, 0, 100)
    assert events[-1].type == "run.failed" and events[-1].terminal


async def test_renew_extends_only_own_leases(store: Store) -> None:
    r1, _ = await store.create_run(new_run())
    await store.claim("w1", 0.5, 1)
    held = await store.renew("w1", 30)
    assert [h.run_id for h in held] == [r1.id]
    assert await store.renew("w2", 30) == []
    await asyncio.sleep(0.6)
    assert await store.reap() == []  # renewed: not expired


async def test_cancel_queued_running_and_twice(store: Store) -> None:
    queued, _ = await store.create_run(new_run())
    cancelled = await store.request_cancel(queued.id, "user")
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLED
    again = await store.request_cancel(queued.id, "user")
    assert again is not None and again.status == RunStatus.CANCELLED and again.last_seq == 2
    assert await store.claim("w", 30, 1) == []

    running, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", 30, 1)
    c = await store.request_cancel(running.id, "user")
    assert c is not None and c.status == RunStatus.CANCELLING
    held = await store.renew("w", 30)
    assert held[0].status == RunStatus.CANCELLING
    lease = Lease(running.id, "w", claimed.lease_epoch)
    await store.finish(lease, RunStatus.CANCELLED, EventDraft("run.cancelled", {}))
    types = [e.type for e in await store.read_events(running.id, 0, 100)]
    assert types == ["run.created", "run.started", "run.cancelling", "run.cancelled"]
    assert await store.request_cancel("00000000-0000-0000-0000-000000000000", "x") is None


async def test_release_requeues_without_counting_the_attempt(store: Store) -> None:
    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", 30, 1)
    await store.release(Lease(run.id, "w", claimed.lease_epoch), "shutdown")
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.QUEUED and after.attempts == 0
    (again,) = await store.claim("w2", 30, 1)
    assert again.attempts == 1


async def test_list_newest_first_with_filters_and_pages(store: Store) -> None:
    ids = [(await store.create_run(new_run(thread_id="t1")))[0].id for _ in range(5)]
    other, _ = await store.create_run(new_run(thread_id="t2"))
    page1 = await store.list_runs(thread_id="t1", status=None, limit=3, before=None)
    assert [r.id for r in page1] == ids[::-1][:3]
    cursor = ListCursor(page1[-1].pos)
    page2 = await store.list_runs(thread_id="t1", status=None, limit=3, before=cursor)
    assert [r.id for r in page2] == ids[::-1][3:]
    await store.request_cancel(ids[0], "x")
    cancelled = await store.list_runs(
        thread_id=None, status=RunStatus.CANCELLED, limit=10, before=None
    )
    assert [r.id for r in cancelled] == [ids[0]]
    assert other.id not in {r.id for r in page1 + page2}


async def test_prune_and_first_retained(store: Store) -> None:
    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", 30, 1)
    await store.append(
        Lease(run.id, "w", claimed.lease_epoch), [EventDraft("x", {}) for _ in range(5)]
    )
    assert await store.first_retained_seq(run.id) == 1
    assert await store.prune_events(run.id, 4) == 4
    assert await store.first_retained_seq(run.id) == 5
    assert [e.seq for e in await store.read_events(run.id, 0, 100)] == [5, 6, 7]


async def test_one_active_run_per_thread_in_order(store: Store) -> None:
    first, _ = await store.create_run(new_run(thread_id="T"))
    second, _ = await store.create_run(new_run(thread_id="T"))
    other, _ = await store.create_run(new_run(thread_id="U"))
    claimed = await store.claim("w", 30, 10)
    assert [r.id for r in claimed] == [first.id, other.id]
    assert await store.claim("w", 30, 10) == []  # second waits for first
    await store.finish(
        Lease(first.id, "w", claimed[0].lease_epoch),
        RunStatus.COMPLETED,
        EventDraft("run.completed", {}),
    )
    (then,) = await store.claim("w", 30, 10)
    assert then.id == second.id


async def test_cancelled_queued_run_unblocks_its_thread(store: Store) -> None:
    first, _ = await store.create_run(new_run(thread_id="T"))
    second, _ = await store.create_run(new_run(thread_id="T"))
    await store.request_cancel(first.id, "x")
    (claimed,) = await store.claim("w", 30, 10)
    assert claimed.id == second.id
