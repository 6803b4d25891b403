"""Waits and signals: park, answer (and its replay), signal (and its lookback), due waits
and their wakers, probes, and what ending or cancelling a run does to its waits."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from outlast.errors import IdempotencyKeyReused, WaitNotFound, WaitNotOpen
from outlast.store import EventDraft, Lease, Run, Store, WaitSpec
from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS, WAITS
from outlast.vocabulary import EventType, RunStatus, WaitKind, WaitStatus
from tests.store_contract.support import Notes, claimed, events_after, notes_of, shape, status_of
from tests.util import new_run

WAIT_STARTED = (EventType.WAIT_STARTED, {"wait", "interrupt"})
WAIT_ENDED = (EventType.WAIT_ENDED, {"wait_id", "kind", "how", "value"})
RUN_WAITING = (EventType.RUN_WAITING, {"status", "waits", "kinds"})
RUN_QUEUED = (EventType.RUN_QUEUED, {"status", "reason"})
HUMAN = WaitSpec("i-1", WaitKind.HUMAN, prompt="ok?", schema={"type": "boolean"})


async def _parked(store: Store, *specs: WaitSpec, lookback: float = 0) -> tuple[Run, Lease]:
    run, lease = await claimed(store)
    assert await store.park(lease, list(specs), lookback) == RunStatus.WAITING
    return run, lease


async def test_park_records_waits_and_releases_the_run(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    shown = EventDraft(EventType.STREAM, {"part": "interrupt"})
    status = await store.park(lease, [HUMAN], 0, [shown])
    assert status == RunStatus.WAITING
    events = await events_after(store, run.id, run.last_seq)
    # the stream part that shows the interrupt comes before its wait
    assert shape(events) == [(EventType.STREAM, {"part"}), WAIT_STARTED, RUN_WAITING]
    assert events[2].data == {"status": RunStatus.WAITING, "waits": 1, "kinds": [WaitKind.HUMAN]}
    (wait,) = await store.list_waits(run.id)
    assert events[1].data == {"wait": wait.public(), "interrupt": {"id": "i-1", "value": None}}
    assert wait.status == WaitStatus.OPEN and wait.kind == WaitKind.HUMAN
    assert wait.interrupt_id == "i-1" and wait.prompt == "ok?" and wait.answer is None
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.WAITING
    assert after.worker_id is None and after.attempts == 0  # parking is no failed attempt
    assert after.lease_epoch == lease.epoch + 1
    assert await notes.take() == notes_of(run.id, EVENTS, STATUS)
    assert await store.count_active("") == 0  # a waiting run holds no worker
    assert await store.claim("w", 30, 1) == []


async def test_open_waits_of_a_page_of_runs_in_one_read(store: Store, notes: Notes) -> None:
    first, _ = await _parked(store, HUMAN, WaitSpec("i-2", WaitKind.HUMAN, prompt="and?"))
    second, _ = await _parked(store, HUMAN)
    idle = await store.create_run(new_run())
    (answered,) = [w for w in await store.list_waits(second.id) if w.interrupt_id == "i-1"]
    await store.answer(second.id, answered.id, True)
    await notes.take()
    found = await store.open_waits([first.id, second.id, idle[0].id, str(uuid.uuid4())])
    # only open waits, only runs that have one, in list_waits' order; a read notifies nobody
    assert set(found) == {first.id}
    assert {w.interrupt_id for w in found[first.id]} == {"i-1", "i-2"}
    assert all(w.status == WaitStatus.OPEN for w in found[first.id])
    assert found[first.id] == await store.list_waits(first.id, WaitStatus.OPEN)
    assert await store.open_waits([]) == {}
    assert await notes.take() == set()


async def test_park_with_a_deadline_wakes_the_wakers(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    timer = WaitSpec("i-t", WaitKind.TIMER, wake_in=3600)
    assert await store.park(lease, [timer], 0) == RunStatus.WAITING
    assert await notes.take() == notes_of(run.id, EVENTS, STATUS, WAITS)
    due_in = await store.next_due_in()
    assert due_in is not None and 3000 < due_in <= 3600
    assert await store.due_waits(10, 30) == []


async def test_answer_requeues_the_run_once(store: Store, notes: Notes) -> None:
    run, _ = await _parked(store, HUMAN)
    (wait,) = await store.list_waits(run.id, WaitStatus.OPEN)
    before = (await store.get_run(run.id)).last_seq  # type: ignore[union-attr]
    await notes.take()
    answered, fresh = await store.answer(run.id, wait.id, True, key="a-1")
    assert fresh and answered.status == WaitStatus.ANSWERED and answered.answer is True
    assert answered.answered_how == "input" and answered.answer_key == "a-1"
    assert answered.answered_at is not None
    events = await events_after(store, run.id, before)
    assert shape(events) == [WAIT_ENDED, RUN_QUEUED]
    assert events[0].data == {
        "wait_id": wait.id,
        "kind": WaitKind.HUMAN,
        "how": "input",
        "value": True,
    }
    assert await status_of(store, run.id) == RunStatus.QUEUED
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    # the same answer under its key is a replay; another value under it is refused
    replay, fresh = await store.answer(run.id, wait.id, True, key="a-1")
    assert not fresh and replay.id == wait.id
    with pytest.raises(IdempotencyKeyReused):
        await store.answer(run.id, wait.id, False, key="a-1")
    with pytest.raises(WaitNotOpen):
        await store.answer(run.id, wait.id, True)
    assert await events_after(store, run.id, before + 2) == []
    assert await notes.take() == set()
    with pytest.raises(WaitNotFound):
        await store.answer(run.id, "not-a-uuid", 1)
    with pytest.raises(WaitNotFound):
        await store.answer(run.id, "00000000-0000-0000-0000-000000000000", 1)
    other, _ = await store.create_run(new_run())
    with pytest.raises(WaitNotFound):  # a wait is found through its own run only
        await store.get_wait(other.id, wait.id)
    got = await store.get_wait(run.id, wait.id)
    assert got.status == WaitStatus.ANSWERED


async def test_an_auth_answer_is_stored_sealed_only(store: Store) -> None:
    """Credentials never reach the disk in the clear, whichever face answered: the store
    refuses an auth answer that is not sealed, and tells a retried sealed answer (same
    digest, another ciphertext) from another one."""
    run, _ = await _parked(store, WaitSpec("i-a", WaitKind.AUTH, object={"scope": "gh"}))
    (wait,) = await store.list_waits(run.id, WaitStatus.OPEN)
    with pytest.raises(ValueError, match="sealed"):
        await store.answer(run.id, wait.id, "ghp_in_the_clear")
    assert (await store.get_wait(run.id, wait.id)).status == WaitStatus.OPEN
    sealed = {"sealed": "gAAAA-one", "digest": "d1"}
    answered, fresh = await store.answer(run.id, wait.id, sealed, key="k")
    assert fresh and answered.answer == sealed
    again, fresh = await store.answer(
        run.id, wait.id, {"sealed": "gAAAA-two", "digest": "d1"}, key="k"
    )
    assert not fresh and again.id == wait.id  # the same secret, sealed again: a replay
    with pytest.raises(IdempotencyKeyReused):
        await store.answer(run.id, wait.id, {"sealed": "gAAAA-3", "digest": "d2"}, key="k")
    events = await store.read_events(run.id, 0, 100)
    ended = [e.data for e in events if e.type == EventType.WAIT_ENDED]
    assert ended[0]["value"] == "(redacted)"


async def test_concurrent_answers_one_lands(store: Store) -> None:
    run, _ = await _parked(store, HUMAN)
    (wait,) = await store.list_waits(run.id)
    results = await asyncio.gather(
        *(store.answer(run.id, wait.id, i) for i in range(20)), return_exceptions=True
    )
    landed = [r for r in results if not isinstance(r, BaseException)]
    assert len(landed) == 1
    assert all(isinstance(r, WaitNotOpen) for r in results if isinstance(r, BaseException))
    types = [e.type for e in await store.read_events(run.id, 0, 100)]
    assert types.count(EventType.RUN_QUEUED) == 1


async def test_resumed_run_consumes_its_answer_and_keeps_the_pending(store: Store) -> None:
    second = WaitSpec("i-2", WaitKind.HUMAN)
    run, _ = await _parked(store, HUMAN, second)
    waits = {w.interrupt_id: w for w in await store.list_waits(run.id)}
    await store.answer(run.id, waits["i-1"].id, "yes")
    (again,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", again.lease_epoch)
    # the graph took i-1's answer and raised i-2 again: i-2 keeps its wait
    assert await store.park(lease, [second], 0) == RunStatus.WAITING
    by_status = {w.interrupt_id: w.status for w in await store.list_waits(run.id)}
    assert by_status == {"i-1": WaitStatus.RESUMED, "i-2": WaitStatus.OPEN}
    assert [w.id for w in await store.list_waits(run.id, WaitStatus.OPEN)] == [waits["i-2"].id]
    started = [
        e for e in await store.read_events(run.id, 0, 100) if e.type == EventType.WAIT_STARTED
    ]
    assert len(started) == 2  # no second wait for i-2


async def test_park_queues_at_once_when_the_answer_is_there(store: Store, notes: Notes) -> None:
    assert await store.signal("order-1", {"paid": True}) == []  # nobody waits yet
    run, lease = await claimed(store)
    await notes.take()
    spec = WaitSpec("i-e", WaitKind.EVENT, event_keys=["order-1"])
    assert await store.park(lease, [spec], 60) == RunStatus.QUEUED
    events = await events_after(store, run.id, run.last_seq)
    assert shape(events) == [WAIT_STARTED, WAIT_ENDED, RUN_QUEUED]
    assert events[1].data["how"] == "signal"
    assert events[1].data["value"] == {"key": "order-1", "payload": {"paid": True}}
    (wait,) = await store.list_waits(run.id)
    assert wait.status == WaitStatus.ANSWERED
    assert await status_of(store, run.id) == RunStatus.QUEUED
    assert await notes.take() == notes_of(run.id, EVENTS, STATUS, QUEUE)


async def test_signal_wakes_the_senders_waits_only(store: Store, notes: Notes) -> None:
    spec = WaitSpec("i-e", WaitKind.EVENT, event_keys=["k", "other"])
    run, _ = await _parked(store, spec)
    before = (await store.get_run(run.id)).last_seq  # type: ignore[union-attr]
    await notes.take()
    assert await store.signal("k", {"x": 1}, principal="someone-else") == []
    assert await store.signal("nobody-waits", {}) == []
    assert await notes.take() == set()
    assert await store.signal("k", {"x": 1}) == [run.id]
    events = await events_after(store, run.id, before)
    assert shape(events) == [WAIT_ENDED, RUN_QUEUED]
    assert events[0].data["value"] == {"key": "k", "payload": {"x": 1}}
    (wait,) = await store.list_waits(run.id)
    assert wait.status == WaitStatus.ANSWERED and wait.answered_how == "signal"
    assert wait.last_signal_at is not None
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    assert await store.signal("k", {"x": 2}) == []  # answered once


async def test_due_waits_wake_and_wake_loses_to_an_answer(store: Store, notes: Notes) -> None:
    timer = WaitSpec("i-t", WaitKind.TIMER, wake_in=-1)  # due already, on database time
    run, _ = await _parked(store, timer)
    due_in = await store.next_due_in()
    assert due_in is not None and due_in <= 0
    (due,) = await store.due_waits(10, 3600)
    assert due.run_id == run.id and due.status == WaitStatus.OPEN
    assert await store.due_waits(10, 3600) == []  # held: no second waker takes it
    held_for = await store.next_due_in()
    assert held_for is not None and held_for > 3000
    before = (await store.get_run(run.id)).last_seq  # type: ignore[union-attr]
    await notes.take()
    assert await store.wake(due, None, "timer")
    assert shape(await events_after(store, run.id, before)) == [WAIT_ENDED, RUN_QUEUED]
    assert await status_of(store, run.id) == RunStatus.QUEUED
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    assert not await store.wake(due, None, "timer")  # answered meanwhile: nothing
    assert await notes.take() == set()
    assert await store.next_due_in() is None


async def test_probes_renew_or_count_failures(store: Store, notes: Notes) -> None:
    external = WaitSpec("i-x", WaitKind.EXTERNAL, wake_in=-1, probe={"every": 60})
    run, _ = await _parked(store, external)
    (due,) = await store.due_waits(10, 30)
    before = (await store.get_run(run.id)).last_seq  # type: ignore[union-attr]
    await notes.take()
    await store.probe_ok(due, 60, {"state": "pending"})
    (event,) = await events_after(store, run.id, before)
    assert shape([event]) == [
        (EventType.WAIT_RENEWED, {"wait_id", "renewals", "detail", "lease_expires_at"})
    ]
    assert event.data["renewals"] == 1 and event.data["detail"] == {"state": "pending"}
    (renewed,) = await store.list_waits(run.id)
    assert renewed.renewals == 1 and renewed.status == WaitStatus.OPEN
    assert await notes.take() == notes_of(run.id, EVENTS)
    assert await store.probe_failed(due, 60, "503") == 1
    assert await store.probe_failed(due, 60, "503") == 2
    failed = await events_after(store, run.id, before + 1)
    assert shape(failed) == [(EventType.WAIT_PROBE_FAILED, {"wait_id", "failures", "error"})] * 2
    assert (await store.list_waits(run.id))[0].failures == 2
    await store.probe_ok(due, 60, None)
    assert (await store.list_waits(run.id))[0].failures == 0  # a success clears the count
    await notes.take()
    assert await store.wake(due, {"done": True}, "probe")
    # an ended wait takes no probe result
    assert await store.probe_failed(due, 60, "late") == 0
    seq = (await store.get_run(run.id)).last_seq  # type: ignore[union-attr]
    await store.probe_ok(due, 60, None)
    assert await events_after(store, run.id, seq) == []


async def test_cancel_withdraws_the_waits(store: Store, notes: Notes) -> None:
    run, _ = await _parked(store, HUMAN)
    await notes.take()
    cancelled = await store.request_cancel(run.id, "user")
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLED
    (wait,) = await store.list_waits(run.id)
    assert wait.status == WaitStatus.WITHDRAWN
    assert await notes.take() == notes_of(run.id, EVENTS, CONTROL, QUEUE, STATUS)
    with pytest.raises(WaitNotOpen):
        await store.answer(run.id, wait.id, True)


async def test_finish_settles_the_waits(store: Store) -> None:
    run, _ = await _parked(store, HUMAN, WaitSpec("i-2", WaitKind.HUMAN))
    waits = {w.interrupt_id: w for w in await store.list_waits(run.id)}
    await store.answer(run.id, waits["i-1"].id, "yes")
    (again,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", again.lease_epoch)
    await store.finish(lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}))
    by_status = {w.interrupt_id: w.status for w in await store.list_waits(run.id)}
    assert by_status == {"i-1": WaitStatus.RESUMED, "i-2": WaitStatus.WITHDRAWN}


async def test_park_of_a_cancelling_run_cancels_it(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await store.request_cancel(run.id, "user")
    await notes.take()
    assert await store.park(lease, [HUMAN], 0) == RunStatus.CANCELLED
    events = await events_after(store, run.id, run.last_seq + 1)
    assert shape(events) == [WAIT_STARTED, (EventType.RUN_CANCELLED, {"status", "reason"})]
    (wait,) = await store.list_waits(run.id)
    assert wait.status == WaitStatus.WITHDRAWN
    assert await status_of(store, run.id) == RunStatus.CANCELLED
    assert await notes.take() == notes_of(run.id, EVENTS, STATUS, QUEUE)
