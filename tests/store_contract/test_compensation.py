"""Runs that owe compensations (``runtime/compensation.py``): once a run's ending is
recorded it goes back to a worker, whatever happens to its lease, until it has undone its
effects; a queued or waiting run cancelled with effects to undo waits for a worker as
``cancelling``. Behaviour across two capabilities: the runs' transitions, given what the
effects ledger says is owed (the ledger itself is test_effects.py's)."""

from __future__ import annotations

import pytest

from outlast.errors import LeaseLost
from outlast.store import Lease, Store, WaitSpec
from outlast.vocabulary import EventType, RunStatus
from tests.store_contract.support import claimed, events_after
from tests.util import new_run

ENDING = {"status": "failed", "error": {"type": "Boom", "message": "no"}}


async def _booked(store: Store, run_id: str, key: str = "k1") -> None:
    await store.effect_begin(run_id, key, "book", "h", {}, True, compensate="m:unbook")
    await store.effect_finish(run_id, key, "done", result={"booking": 7})


async def test_set_ending_is_fenced_and_a_reaped_ending_run_comes_back(store: Store) -> None:
    created, _ = await store.create_run(new_run(max_attempts=1))
    (claimed_run,) = await store.claim("w", -1, 1)  # lease already expired
    lease = Lease(claimed_run.id, "w", claimed_run.lease_epoch)
    with pytest.raises(LeaseLost):
        await store.set_ending(Lease(claimed_run.id, "w", lease.epoch + 1), ENDING)
    await store.set_ending(lease, ENDING)
    # its only attempt is used, yet it is requeued: its compensations are owed
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.QUEUED
    after = await store.get_run(claimed_run.id)
    assert after is not None and after.ending == ENDING and after.error is None
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == claimed_run.id and again.status == RunStatus.RUNNING
    assert again.ending == ENDING
    assert created.ending is None


async def test_a_waiting_run_cancelled_owing_compensations_waits_for_a_worker(
    store: Store,
) -> None:
    run, lease = await claimed(store)
    await _booked(store, run.id)
    status = await store.park(lease, [WaitSpec(interrupt_id="i1", kind="human")], 0)
    assert status == RunStatus.WAITING
    seq = (await store.get_run(run.id)).last_seq  # type: ignore[union-attr]
    cancelled = await store.request_cancel(run.id, "user")
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLING
    assert cancelled.worker_id is None
    assert cancelled.ending == {
        "status": "cancelled",
        "error": {"type": "cancelled", "reason": "user"},
    }
    assert [w.status for w in await store.list_waits(run.id)] == ["withdrawn"]
    (event,) = await events_after(store, run.id, seq)
    assert (event.type, event.data["status"]) == (EventType.RUN_CANCELLING, "cancelling")
    # a second cancel changes nothing; the claim hands it to a worker, still cancelling
    assert (await store.request_cancel(run.id, "again")).status == RunStatus.CANCELLING  # type: ignore[union-attr]
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == run.id and again.status == RunStatus.CANCELLING
    assert again.worker_id == "w2"
    started = (await store.read_events(run.id, 0, 1000))[-1]
    assert (started.type, started.data["status"]) == (EventType.RUN_STARTED, "cancelling")
    # lost again: back to cancelling without a worker, not cancelled
    await store.renew("w2", -1)
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.CANCELLING
    last = (await store.read_events(run.id, 0, 1000))[-1]
    assert last.type == EventType.RUN_REQUEUED
    # a compensation that needs a person parks it waiting, not cancelled
    (third,) = await store.claim("w3", 30, 1)
    lease3 = Lease(run.id, "w3", third.lease_epoch)
    spec = WaitSpec(interrupt_id="compensation:k1:x", kind="reconciliation")
    assert await store.park(lease3, [spec], 0) == RunStatus.WAITING
    # and cancelling it then gives the compensation up
    given_up = await store.request_cancel(run.id, "give up")
    assert given_up is not None and given_up.status == RunStatus.CANCELLED


async def test_a_cancel_owes_nothing_for_effects_not_done_or_not_compensable(
    store: Store,
) -> None:
    run, lease = await claimed(store)
    await store.effect_begin(run.id, "k1", "book", "h", {}, True, compensate="m:unbook")
    await store.effect_finish(run.id, "k1", "failed", error="no")  # it never happened
    await store.effect_begin(run.id, "k2", "mail", "h", {}, True)
    await store.effect_finish(run.id, "k2", "done", result=1)  # nothing undoes it
    await store.park(lease, [WaitSpec(interrupt_id="i1", kind="human")], 0)
    cancelled = await store.request_cancel(run.id, "user")
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLED
    assert cancelled.ending is None


async def test_release_of_an_ending_run_gives_it_back(store: Store) -> None:
    run, lease = await claimed(store)
    await store.request_cancel(run.id, "user")
    ending = {"status": "cancelled", "error": {"type": "cancelled", "reason": "user"}}
    await store.set_ending(lease, ending)
    await store.release(lease, "shutdown")
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.CANCELLING
    assert after.worker_id is None and after.attempts == 0
    (again,) = await store.claim("w2", 30, 1)
    assert again.status == RunStatus.CANCELLING and again.ending == ending


async def test_a_worker_lost_on_the_last_attempt_of_a_run_owing_compensations(
    store: Store,
) -> None:
    await store.create_run(new_run(max_attempts=1))
    (run,) = await store.claim("w", -1, 1)
    await _booked(store, run.id)
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.QUEUED  # not failed: its booking is to be undone
    after = await store.get_run(run.id)
    assert after is not None and after.ending is not None
    assert after.ending["status"] == "failed"
    assert after.ending["error"]["type"] == "worker_lost"


async def test_a_worker_lost_while_cancelling_a_run_owing_compensations(store: Store) -> None:
    owing, _ = await claimed(store)
    await _booked(store, owing.id)
    plain, _ = await claimed(store)
    for run in (owing, plain):
        await store.request_cancel(run.id, "user")
    await store.renew("w", -1)
    reaped = {r.run_id: r.status for r in await store.reap()}
    assert reaped == {owing.id: RunStatus.CANCELLING, plain.id: RunStatus.CANCELLED}
    after = await store.get_run(owing.id)
    assert after is not None and after.worker_id is None
    assert after.ending == {"status": "cancelled", "error": {"type": "cancelled", "reason": "user"}}
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == owing.id and again.status == RunStatus.CANCELLING


async def test_a_cancelling_run_owing_compensations_released_stays_cancelling(
    store: Store,
) -> None:
    run, lease = await claimed(store)
    await _booked(store, run.id)
    await store.request_cancel(run.id, "user")  # the worker drained before it heard
    await store.release(lease, "shutdown")
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.CANCELLING
    assert after.worker_id is None and after.attempts == 0
    assert after.ending == {"status": "cancelled", "error": {"type": "cancelled", "reason": "user"}}
    last = (await store.read_events(run.id, 0, 1000))[-1]
    assert (last.type, last.data["status"]) == (EventType.RUN_RELEASED, "cancelling")


async def test_a_run_cancelled_owing_compensations_as_it_parks_waits_for_a_worker(
    store: Store,
) -> None:
    run, lease = await claimed(store)
    await _booked(store, run.id)
    # its graph stopped at an interrupt; the cancel commits before the park does
    await store.request_cancel(run.id, "user")
    spec = WaitSpec(interrupt_id="i1", kind="human")
    assert await store.park(lease, [spec], 0) == RunStatus.CANCELLING
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.CANCELLING
    assert after.worker_id is None and after.attempts == 0
    assert after.ending == {"status": "cancelled", "error": {"type": "cancelled", "reason": "user"}}
    assert [w.status for w in await store.list_waits(run.id)] == ["withdrawn"]
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == run.id and again.status == RunStatus.CANCELLING
    assert again.ending == after.ending
