"""A rollback is asked with the cancel, in its transaction (``request_cancel(...,
rollback=True)``, LangGraph's ``rollback`` strategy), and owed until a worker has done it:
it is in the run's error and, once nobody holds the run, in its recorded ending, which a
release and the reaper keep and the claim hands on. The run's LangGraph runs are hidden
in the same transaction."""

from __future__ import annotations

from outlast.store import Lease, NewRun, Run, Store, WaitSpec
from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS
from outlast.vocabulary import EventType, RunStatus, WaitKind, WaitStatus
from tests.store_contract.support import Notes, claimed, events_after, notes_of, status_of
from tests.util import lg_run_of, new_run

ASKED = {"type": "cancelled", "reason": "undo", "rollback": True}
OWED = {"status": "cancelled", "error": {"type": "cancelled", "reason": "undo"}, "rollback": True}


async def _lg(store: Store, thread: str = "T") -> NewRun:
    new = new_run(thread_id=thread)
    await store.lg_create_run(new, lg_run_of(new), strategy="enqueue", supersede_reason="x")
    return new


async def _claimed_lg(store: Store) -> tuple[Run, Lease]:
    await _lg(store)
    (run,) = await store.claim("w", 30, 1)
    return run, Lease(run.id, "w", run.lease_epoch)


async def _hidden(store: Store, run_id: str) -> bool:
    return all(lg.deleted for lg in await store.lg_runs_of_run(run_id))


async def test_a_rollback_owed_survives_a_release(store: Store) -> None:
    run, lease = await _claimed_lg(store)
    cancelling = await store.request_cancel(run.id, "undo", rollback=True)
    assert cancelling is not None and cancelling.status == RunStatus.CANCELLING
    assert cancelling.error == ASKED and cancelling.worker_id == "w"
    assert await _hidden(store, run.id)
    await store.release(lease, "shutdown")  # drained before it heard of the cancel
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.CANCELLING
    assert after.worker_id is None and after.ending == OWED
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == run.id and again.status == RunStatus.CANCELLING
    assert again.ending == OWED


async def test_a_rollback_owed_survives_a_reap_on_the_last_attempt(store: Store) -> None:
    await store.create_run(new_run(max_attempts=1))
    (run,) = await store.claim("w", 30, 1)
    await store.request_cancel(run.id, "undo", rollback=True)
    await store.renew("w", -1)
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.CANCELLING  # not cancelled: its thread is to be undone
    (last,) = (await store.read_events(run.id, 0, 1000))[-1:]
    assert (last.type, last.data["status"]) == (EventType.RUN_REQUEUED, "cancelling")
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == run.id and again.ending == OWED and again.status == RunStatus.CANCELLING


async def test_an_idle_run_that_ran_waits_for_a_worker_to_roll_it_back(
    store: Store, notes: Notes
) -> None:
    run, lease = await _claimed_lg(store)
    await store.park(lease, [WaitSpec("i", WaitKind.HUMAN)], 0)
    parked = await store.get_run(run.id)
    assert parked is not None
    await notes.take()
    cancelled = await store.request_cancel(run.id, "undo", rollback=True)
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLING
    assert cancelled.worker_id is None and cancelled.ending == OWED
    assert [w.status for w in await store.list_waits(run.id)] == [WaitStatus.WITHDRAWN]
    (event,) = await events_after(store, run.id, parked.last_seq)
    assert (event.type, event.data) == (
        EventType.RUN_CANCELLING,
        {"status": "cancelling", "reason": "undo"},
    )
    assert await notes.take() == notes_of(run.id, EVENTS, CONTROL, QUEUE, STATUS)
    assert await _hidden(store, run.id)
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == run.id and again.ending == OWED


async def test_a_run_never_claimed_has_nothing_to_roll_back(store: Store) -> None:
    new = await _lg(store)
    cancelled = await store.request_cancel(new.id, "undo", rollback=True)
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLED
    assert cancelled.ending is None and await _hidden(store, new.id)
    assert await store.claim("w", 30, 1) == []


async def test_a_rollback_of_an_ended_run_only_hides_it(store: Store, notes: Notes) -> None:
    new = await _lg(store)
    await store.request_cancel(new.id, "first")
    await notes.take()
    again = await store.request_cancel(new.id, "undo", rollback=True)
    assert again is not None and again.status == RunStatus.CANCELLED
    assert again.error == {"type": "cancelled", "reason": "first"}
    assert await _hidden(store, new.id)
    assert await notes.take() == set()  # nothing changed that anyone follows


async def test_set_ending_keeps_the_rollback_the_cancel_asked(store: Store) -> None:
    run, lease = await claimed(store)
    await store.request_cancel(run.id, "undo", rollback=True)
    # its holder decides how it ends without having read the rollback
    failed = {"status": "failed", "error": {"type": "Boom"}}
    recorded = await store.set_ending(lease, failed)
    assert recorded == {**failed, "rollback": True}
    after = await store.get_run(run.id)
    assert after is not None and after.ending == recorded


async def test_the_rollback_strategy_asks_a_rollback_of_the_run_it_replaces(
    store: Store,
) -> None:
    first = await _lg(store)
    (running,) = await store.claim("w", 30, 1)
    behind = new_run(thread_id="T")
    await store.lg_create_run(behind, lg_run_of(behind), strategy="rollback", supersede_reason="x")
    old = await store.get_run(first.id)
    assert old is not None and old.status == RunStatus.CANCELLING and old.worker_id == "w"
    assert old.error is not None and old.error["rollback"] and old.error["compensate"]
    assert await _hidden(store, first.id)
    # the new run waits for the old one to be rolled back and ended
    assert await store.claim("w2", 30, 1) == []
    assert await status_of(store, behind.id) == RunStatus.QUEUED
    assert running.id == first.id


async def test_a_run_cancelled_with_a_rollback_as_it_parks_waits_for_a_worker(
    store: Store, notes: Notes
) -> None:
    run, lease = await _claimed_lg(store)
    # its graph stopped at an interrupt; the cancel commits before the park does
    await store.request_cancel(run.id, "undo", rollback=True)
    asked = await store.get_run(run.id)
    assert asked is not None
    await notes.take()
    assert await store.park(lease, [WaitSpec("i", WaitKind.HUMAN)], 0) == RunStatus.CANCELLING
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.CANCELLING
    assert after.worker_id is None and after.ending == OWED and after.error == ASKED
    assert after.attempts == 0  # the attempt given back, as a park gives it
    assert [w.status for w in await store.list_waits(run.id)] == [WaitStatus.WITHDRAWN]
    started, released = await events_after(store, run.id, asked.last_seq)
    assert started.type == EventType.WAIT_STARTED
    assert (released.type, released.data["status"]) == (EventType.RUN_RELEASED, "cancelling")
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    (again,) = await store.claim("w2", 30, 1)
    assert again.id == run.id and again.status == RunStatus.CANCELLING
    assert again.ending == OWED
