"""What a run does now (activity), what it consumed (usage), and the budget it may spend:
fenced writes that append nothing and wake nobody (the worker appends the events)."""

from __future__ import annotations

import pytest

from outlast.errors import LeaseLost
from outlast.store import EventDraft, Lease, Store, WaitSpec
from outlast.vocabulary import EventType, RunStatus, WaitKind, WaitStatus
from tests.store_contract.support import Notes, claimed, events_after
from tests.util import new_run


async def test_activity_and_usage_are_recorded_until_the_run_ends(
    store: Store, notes: Notes
) -> None:
    run, lease = await claimed(store)
    await notes.take()
    await store.set_activity(lease, {"node": "a"}, {"steps": 1})
    got = await store.get_run(run.id)
    assert got is not None and got.activity == {"node": "a"} and got.usage == {"steps": 1}
    await store.set_activity(lease, {"node": "b"})  # no usage given: usage stays
    got = await store.get_run(run.id)
    assert got is not None and got.activity == {"node": "b"} and got.usage == {"steps": 1}
    await store.set_activity(lease, None)
    got = await store.get_run(run.id)
    assert got is not None and got.activity is None and got.status == RunStatus.RUNNING
    assert await events_after(store, run.id, run.last_seq) == []
    assert await notes.take() == set()
    await store.set_activity(lease, {"node": "c"})
    await store.finish(lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}))
    final = await store.get_run(run.id)
    assert final is not None and final.activity is None and final.usage == {"steps": 1}


async def test_a_granted_tranche_consumes_its_budget_wait(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    spec = WaitSpec("i-b", WaitKind.BUDGET, prompt="more?")
    assert await store.park(lease, [spec], 0) == RunStatus.WAITING
    (wait,) = await store.list_waits(run.id)
    await store.answer(run.id, wait.id, {"max_steps": 10})
    (again,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", again.lease_epoch)
    seq = again.last_seq
    await notes.take()
    await store.apply_budget(lease, {"max_steps": 10}, wait.id)
    got = await store.get_run(run.id)
    assert got is not None and got.budget == {"max_steps": 10}
    (consumed,) = await store.list_waits(run.id)
    assert consumed.status == WaitStatus.RESUMED
    # applied once: the consumed wait is no longer answered, a replay consumes nothing
    await store.apply_budget(lease, {"max_steps": 10}, wait.id)
    assert (await store.list_waits(run.id))[0].status == WaitStatus.RESUMED
    await store.apply_budget(lease, {"max_steps": 20}, None)
    got = await store.get_run(run.id)
    assert got is not None and got.budget == {"max_steps": 20}
    assert await events_after(store, run.id, seq) == []
    assert await notes.take() == set()


async def test_the_supervisors_memory_survives_a_takeover_and_is_fenced(
    store: Store, notes: Notes
) -> None:
    run, _ = await store.create_run(new_run())
    (run,) = await store.claim("w", -1, 1)  # a lease already past, on database time
    lease = Lease(run.id, "w", run.lease_epoch)
    await notes.take()
    await store.set_supervision(lease, {"auto_tranches": 1, "note": "try another way"})
    got = await store.get_run(run.id)
    assert got is not None and got.supervision == {"auto_tranches": 1, "note": "try another way"}
    assert got.usage is None  # kept apart from what the snapshot shows as usage
    assert await events_after(store, run.id, run.last_seq) == []
    assert await notes.take() == set()
    # reaped and claimed again: the memory is still there
    await store.reap()
    (again,) = await store.claim("w2", 30, 1)
    assert again.supervision == {"auto_tranches": 1, "note": "try another way"}
    with pytest.raises(LeaseLost):  # the first worker no longer holds the run
        await store.set_supervision(lease, {"auto_tranches": 2})
    fresh = Lease(run.id, "w2", again.lease_epoch)
    await store.set_supervision(fresh, {"auto_tranches": 2})
    got = await store.get_run(run.id)
    assert got is not None and got.supervision == {"auto_tranches": 2}
