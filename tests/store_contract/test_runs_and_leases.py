"""Runs and their leases: acceptance, idempotency, claim, renew, release, reap, finish,
cancel, and the fence every worker write passes against a stale lease epoch."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from outlast.errors import IdempotencyKeyReused, LeaseLost
from outlast.store import EventDraft, Lease, ListCursor, Store
from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS
from outlast.vocabulary import EventType, RunStatus
from tests.store_contract.support import (
    CREATED,
    Notes,
    claimed,
    events_after,
    notes_of,
    shape,
)
from tests.util import new_run

STARTED = (EventType.RUN_STARTED, {"status", "attempt", "worker_id", "epoch"})
# The payload of the reaper's events (a takeover), and which takeover it was.
TAKEOVER = {"status", "reason", "attempts", "takeover", "counted"}
PROGRESSED, STALLED = "lease_expired_with_progress", "lease_expired_without_progress"
UNKNOWN = "00000000-0000-0000-0000-000000000000"


# -- acceptance ----------------------------------------------------------------------------


async def test_create_writes_run_and_first_event(store: Store, notes: Notes) -> None:
    new = new_run()
    run, created = await store.create_run(new)
    assert created and run.status == RunStatus.QUEUED and run.last_seq == 1
    assert run.attempts == 0 and run.lease_epoch == 0 and run.worker_id is None
    events = await store.read_events(run.id, 0, 100)
    assert [(e.seq, e.type) for e in events] == [(1, EventType.RUN_CREATED)]
    assert shape(events) == [CREATED]
    assert events[0].data == {
        "status": RunStatus.QUEUED,
        "graph": new.graph,
        "thread_id": new.thread_id,
    }
    assert await notes.take() == notes_of(run.id, QUEUE)
    again = await store.get_run(run.id)
    assert again is not None and again.fingerprint == run.fingerprint
    assert await store.get_run(UNKNOWN) is None


async def test_idempotency_same_body_same_run(store: Store, notes: Notes) -> None:
    first, created = await store.create_run(new_run(key="k1"))
    await notes.take()
    second, created2 = await store.create_run(new_run(key="k1"))
    assert created and not created2 and second.id == first.id
    assert await notes.take() == set()  # a replay wakes nobody
    assert [e.seq for e in await store.read_events(first.id, 0, 10)] == [1]
    by_key = await store.get_run_by_key("", "k1")
    assert by_key is not None and by_key.id == first.id
    assert await store.get_run_by_key("someone-else", "k1") is None
    assert await store.get_run_by_key("", "k-unused") is None


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
    assert (
        await store.list_runs(
            thread_id=None, status=None, limit=10, before=None, principal="nobody"
        )
        == []
    )


async def test_counts_by_status_and_active_per_principal(store: Store) -> None:
    assert await store.count_runs_by_status() == {}
    running, _ = await claimed(store)
    queued, _ = await store.create_run(new_run())
    await store.create_run(new_run())
    cancelled, _ = await store.create_run(new_run())
    await store.request_cancel(cancelled.id, "x")
    assert await store.count_runs_by_status() == {
        RunStatus.QUEUED: 2,
        RunStatus.RUNNING: 1,
        RunStatus.CANCELLED: 1,
    }
    # queued and running hold or wait for a worker; cancelled does not
    assert await store.count_active("") == 3
    assert await store.count_active("nobody") == 0
    assert queued.id != running.id


# -- claim and renew -----------------------------------------------------------------------


async def test_claim_is_exclusive_and_ordered(store: Store, notes: Notes) -> None:
    ids = [(await store.create_run(new_run()))[0].id for _ in range(5)]
    await notes.take()
    a, b = await asyncio.gather(store.claim("wa", 30, 3), store.claim("wb", 30, 3))
    got = [r.id for r in a] + [r.id for r in b]
    assert sorted(got) == sorted(ids) and len(set(got)) == 5
    first = a if a and a[0].id == ids[0] else b
    assert first[0].id == ids[0]
    for run in a + b:
        assert run.status == RunStatus.RUNNING and run.attempts == 1 and run.lease_epoch == 1
        assert run.worker_id in ("wa", "wb") and run.lease_expires_at is not None
        events = await store.read_events(run.id, 0, 10)
        assert shape(events) == [CREATED, STARTED]
        assert events[1].data == {
            "status": RunStatus.RUNNING,
            "attempt": 1,
            "worker_id": run.worker_id,
            "epoch": 1,  # which execution: a live chunk's number says its epoch
        }
    assert await notes.take() == {(EVENTS, i) for i in ids}
    assert await store.claim("wc", 30, 10) == []
    assert await notes.take() == set()


async def test_one_active_run_per_thread_in_order(store: Store) -> None:
    first, _ = await store.create_run(new_run(thread_id="T"))
    second, _ = await store.create_run(new_run(thread_id="T"))
    other, _ = await store.create_run(new_run(thread_id="U"))
    claimed_runs = await store.claim("w", 30, 10)
    assert [r.id for r in claimed_runs] == [first.id, other.id]
    assert await store.claim("w", 30, 10) == []  # second waits for first
    await store.finish(
        Lease(first.id, "w", claimed_runs[0].lease_epoch),
        RunStatus.COMPLETED,
        EventDraft(EventType.RUN_COMPLETED, {}),
    )
    (then,) = await store.claim("w", 30, 10)
    assert then.id == second.id


async def test_renew_extends_only_own_leases(store: Store, notes: Notes) -> None:
    r1, _ = await store.create_run(new_run())
    (run,) = await store.claim("w1", -1, 1)  # a lease already past, on database time
    await notes.take()
    held = await store.renew("w1", 30)
    assert [(h.run_id, h.epoch, h.status) for h in held] == [
        (r1.id, run.lease_epoch, RunStatus.RUNNING)
    ]
    assert await store.renew("w2", 30) == []
    assert await store.reap() == []  # renewed: not expired
    assert await notes.take() == set()  # a renewal is not a transition


async def test_renew_names_the_runs_still_executed(store: Store) -> None:
    a, _ = await claimed(store, worker="w")
    b, _ = await claimed(store, worker="w")
    await store.renew("w", -1)  # both leases past
    held = await store.renew("w", 30, [a.id])
    assert [h.run_id for h in held] == [a.id]
    assert await store.renew("w", 30, []) == []
    reaped = await store.reap()
    assert [r.run_id for r in reaped] == [b.id]  # the one it gave up on expired


# -- the fence -----------------------------------------------------------------------------


async def test_fencing_rejects_a_taken_over_worker(store: Store, notes: Notes) -> None:
    run, _ = await store.create_run(new_run())
    (got,) = await store.claim("old", -1, 1)
    old = Lease(run.id, "old", got.lease_epoch)
    await notes.take()
    reaped = await store.reap()
    assert [(r.run_id, r.status, r.seq) for r in reaped] == [(run.id, RunStatus.QUEUED, 3)]
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    # the old worker is fenced even before anyone claims again
    with pytest.raises(LeaseLost):
        await store.append(old, [EventDraft("late", {})])
    (again,) = await store.claim("new", 30, 1)
    assert again.attempts == 2 and again.lease_epoch > old.epoch
    await notes.take()
    # a stale epoch with the right worker id is fenced too
    stale_self = Lease(run.id, "new", old.epoch)
    for lease in (old, stale_self):
        with pytest.raises(LeaseLost):
            await store.append(lease, [EventDraft("late", {})])
        with pytest.raises(LeaseLost):
            await store.finish(lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}))
        with pytest.raises(LeaseLost):
            await store.release(lease, "shutdown")
        with pytest.raises(LeaseLost):
            await store.park(lease, [], 0)
        with pytest.raises(LeaseLost):
            await store.set_activity(lease, {"what": "late"})
        with pytest.raises(LeaseLost):
            await store.apply_budget(lease, {"max_steps": 1}, None)
    assert await notes.take() == set()  # refused writes wake nobody
    assert old.run_id not in {h.run_id for h in await store.renew("old", 30)}
    new = Lease(run.id, "new", again.lease_epoch)
    seq = await store.finish(
        new, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}), result={"ok": True}
    )
    events = await store.read_events(run.id, 0, 100)
    assert [e.seq for e in events] == list(range(1, seq + 1))
    assert "late" not in {e.type for e in events}
    final = await store.get_run(run.id)
    assert (
        final is not None
        and final.status == RunStatus.COMPLETED
        and final.result == {"ok": True}
        and final.budget is None
        and final.activity is None
    )


# -- finish, release, reap -----------------------------------------------------------------


async def test_finish_ends_the_run_and_wakes_its_followers(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    seq = await store.finish(
        lease,
        RunStatus.FAILED,
        EventDraft(EventType.RUN_FAILED, {"status": RunStatus.FAILED, "error": "boom"}),
        error={"type": "boom"},
    )
    assert seq == run.last_seq + 1
    (ended,) = await events_after(store, run.id, run.last_seq)
    assert (ended.seq, ended.type, ended.data) == (
        seq,
        EventType.RUN_FAILED,
        {"status": RunStatus.FAILED, "error": "boom"},
    )
    assert ended.terminal
    final = await store.get_run(run.id)
    assert final is not None and final.status == RunStatus.FAILED and final.terminal
    assert final.error == {"type": "boom"} and final.worker_id is None
    assert final.lease_expires_at is None and final.last_seq == seq
    # nothing queued behind it on its thread: no worker is woken to claim nothing
    assert await notes.take() == notes_of(run.id, EVENTS, STATUS)
    with pytest.raises(LeaseLost):  # a finished run takes no more writes, even from its holder
        await store.append(lease, [EventDraft(EventType.CUSTOM, {})])


async def test_finish_wakes_the_queue_for_the_threads_next_run(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    behind, _ = await store.create_run(new_run(thread_id=run.thread_id))
    assert await store.claim("w2", 30, 10) == []  # one active run per thread
    await notes.take()
    await store.finish(lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}))
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    (next_run,) = await store.claim("w2", 30, 10)
    assert next_run.id == behind.id


async def test_release_requeues_without_counting_the_attempt(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    seq = await store.release(lease, "shutdown")
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.QUEUED and after.attempts == 0
    assert after.worker_id is None and after.lease_epoch == lease.epoch + 1
    (event,) = await events_after(store, run.id, run.last_seq)
    assert (event.seq, event.type, event.data) == (
        seq,
        EventType.RUN_RELEASED,
        {"status": RunStatus.QUEUED, "reason": "shutdown"},
    )
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    (again,) = await store.claim("w2", 30, 1)
    assert again.attempts == 1
    # a first claim writes exactly created and started; the run released and claimed again
    # has history (what the execution resumes from, Run.has_history)
    assert run.last_seq == 2 and not run.has_history and again.has_history


async def test_release_of_a_cancelling_run_cancels_it(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await store.request_cancel(run.id, "user")
    await notes.take()
    await store.release(lease, "shutdown")
    after = await store.get_run(run.id)
    assert after is not None and after.status == RunStatus.CANCELLED
    assert after.attempts == 1 and after.error is not None
    assert after.error["type"] == "cancelled"
    events = await events_after(store, run.id, run.last_seq)
    assert shape(events) == [
        (EventType.RUN_CANCELLING, {"status", "reason"}),
        (EventType.RUN_CANCELLED, {"status", "reason"}),
    ]
    assert events[-1].terminal
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)


async def test_reaper_fails_after_max_attempts(store: Store, notes: Notes) -> None:
    run, _ = await store.create_run(new_run(max_attempts=1))
    await store.claim("w", -1, 1)
    await notes.take()
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.FAILED
    final = await store.get_run(run.id)
    assert final is not None and final.status == RunStatus.FAILED
    assert final.error is not None and final.error["type"] == "worker_lost"
    assert "poison pill" in final.error["reason"] and final.error["attempts"] == 1
    events = await store.read_events(run.id, 0, 100)
    assert events[-1].type == EventType.RUN_FAILED and events[-1].terminal
    assert shape(events[-1:]) == [(EventType.RUN_FAILED, TAKEOVER | {"error"})]
    assert events[-1].data["takeover"] == STALLED and events[-1].data["counted"] is True
    assert events[-1].data["error"]["type"] == "worker_lost"
    assert events[-1].seq == reaped.seq
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)


async def test_reaper_requeues_and_cancels_a_cancelling_run(store: Store) -> None:
    requeued, _ = await claimed(store, worker="w")
    cancelling, _ = await claimed(store, worker="w")
    await store.request_cancel(cancelling.id, "user")
    await store.renew("w", -1)
    reaped = {r.run_id: r.status for r in await store.reap()}
    assert reaped == {requeued.id: RunStatus.QUEUED, cancelling.id: RunStatus.CANCELLED}
    (last,) = (await store.read_events(requeued.id, 0, 100))[-1:]
    assert shape([last]) == [(EventType.RUN_REQUEUED, TAKEOVER)]
    (last,) = (await store.read_events(cancelling.id, 0, 100))[-1:]
    assert shape([last]) == [(EventType.RUN_CANCELLED, TAKEOVER)]
    assert await store.reap() == []
    assert await store.reap(limit=0) == []


def _step(task: str, **extra: object) -> EventDraft:
    """A step's ``node.updated``, as the translator (or a resume's recovery) logs it."""
    return EventDraft(
        EventType.NODE_UPDATED, {"node": "n", "ns": "", "update": {}, "task": task, **extra}
    )


async def test_a_takeover_after_progress_gives_the_attempt_back(store: Store, notes: Notes) -> None:
    """A worker lost while its run made progress (a step saved since its claim) costs
    the run nothing: the attempt is given back, on its last attempt too."""
    run, _ = await store.create_run(new_run(max_attempts=1))
    (got,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", got.lease_epoch)
    await store.append(lease, [EventDraft(EventType.CUSTOM, {}), _step("t1")])
    await store.renew("w", -1)  # the worker stops renewing: starved, killed
    await notes.take()
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.QUEUED  # not failed: it was making progress
    after = await store.get_run(run.id)
    assert after is not None and after.attempts == 0 and after.error is None
    (event,) = await events_after(store, run.id, reaped.seq - 1)
    assert (event.type, event.data) == (
        EventType.RUN_REQUEUED,
        {
            "status": RunStatus.QUEUED,
            "reason": "worker lease expired",
            "attempts": 0,
            "takeover": PROGRESSED,
            "counted": False,
        },
    )
    assert await notes.take() == notes_of(run.id, EVENTS, QUEUE, STATUS)
    (again,) = await store.claim("w2", 30, 1)
    assert again.attempts == 1


async def test_a_takeover_without_progress_since_the_claim_counts(store: Store) -> None:
    """Progress is the attempt's own: steps an earlier attempt saved, and steps a resume
    recovers into the log for an earlier attempt, are not progress of this one; nor are
    a subgraph's steps (its checkpoints are not the run's) or custom events."""
    run, _ = await store.create_run(new_run(max_attempts=2))
    (first,) = await store.claim("w", 30, 1)
    await store.append(Lease(run.id, "w", first.lease_epoch), [_step("t1")])
    await store.renew("w", -1)
    await store.reap()  # progressed: given back
    (second,) = await store.claim("w2", 30, 1)
    assert second.attempts == 1
    lease = Lease(run.id, "w2", second.lease_epoch)
    others = [
        _step("t0", recovered=True),
        _step("t2", ns="sub:1"),
        EventDraft(EventType.CUSTOM, {}),
    ]
    await store.append(lease, others)
    await store.renew("w2", -1)
    (reaped,) = await store.reap()
    assert reaped.status == RunStatus.QUEUED
    (event,) = await events_after(store, run.id, reaped.seq - 1)
    assert (event.data["takeover"], event.data["counted"], event.data["attempts"]) == (
        STALLED,
        True,
        1,
    )
    (third,) = await store.claim("w3", 30, 1)
    assert third.attempts == 2
    await store.renew("w3", -1)
    (failed,) = await store.reap()  # a second attempt lost without progress: its last
    assert failed.status == RunStatus.FAILED
    final = await store.get_run(run.id)
    assert final is not None and final.error is not None
    assert final.error["type"] == "worker_lost" and "poison pill" in final.error["reason"]


async def test_steps_streamed_under_durability_exit_are_not_progress(store: Store) -> None:
    """Under ``exit`` nothing is saved before the graph returns: a successor starts
    over, so the attempt counts (the deployment's durability, or the run's own)."""
    own = dataclasses.replace(new_run(), options={"durability": "exit"})
    cases = [(own, "w1", "sync"), (new_run(), "w2", "exit")]
    leases = [(await claimed(store, new, worker))[1] for new, worker, _ in cases]
    for lease, (_, worker, durability) in zip(leases, cases, strict=True):
        run = await store.get_run(lease.run_id)
        assert run is not None
        await store.append(lease, [_step("t1")])
        await store.renew(worker, -1)
        (reaped,) = await store.reap(durability=durability)
        (event,) = await events_after(store, run.id, reaped.seq - 1)
        assert (event.data["takeover"], event.data["counted"]) == (STALLED, True)
        after = await store.get_run(run.id)
        assert after is not None and after.attempts == 1


async def test_a_worker_does_not_reap_the_runs_it_executes(store: Store) -> None:
    """A worker whose own heartbeat was late (its loop starved) is alive: its reaper
    passes over the expired leases of the runs it executes, which it renews at its next
    beat. Another worker's reaper takes them; so does its own, for a run it holds in the
    store without executing it (an eager claim it never started)."""
    mine, _ = await claimed(store, worker="w")
    orphan, _ = await claimed(store, worker="w")
    await store.renew("w", -1)  # both leases past
    assert await store.reap(holder="w", held=[mine.id, orphan.id]) == []
    reaped = await store.reap(holder="w", held=[mine.id])
    assert [(r.run_id, r.status) for r in reaped] == [(orphan.id, RunStatus.QUEUED)]
    held = await store.renew("w", 30, [mine.id])  # its next beat: still its run
    assert [h.run_id for h in held] == [mine.id]
    await store.renew("w", -1)
    # another worker executing a run of the same id is no reason to spare this one
    reaped = await store.reap(holder="w2", held=[mine.id])
    assert [(r.run_id, r.status) for r in reaped] == [(mine.id, RunStatus.QUEUED)]


async def test_reap_takes_at_most_limit(store: Store) -> None:
    for _ in range(3):
        await claimed(store)
    await store.renew("w", -1)
    assert len(await store.reap(limit=2)) == 2
    assert len(await store.reap(limit=2)) == 1


# -- cancel --------------------------------------------------------------------------------


async def test_cancel_queued_running_and_twice(store: Store, notes: Notes) -> None:
    queued, _ = await store.create_run(new_run())
    await notes.take()
    cancelled = await store.request_cancel(queued.id, "user")
    assert cancelled is not None and cancelled.status == RunStatus.CANCELLED
    assert cancelled.error == {"type": "cancelled", "reason": "user"}
    assert shape(await events_after(store, queued.id, 1)) == [
        (EventType.RUN_CANCELLED, {"status", "reason"})
    ]
    assert await notes.take() == notes_of(queued.id, EVENTS, CONTROL, QUEUE, STATUS)
    again = await store.request_cancel(queued.id, "user")
    assert again is not None and again.status == RunStatus.CANCELLED and again.last_seq == 2
    assert await notes.take() == set()  # nothing changed, nobody woken
    assert await store.claim("w", 30, 1) == []

    running, _ = await store.create_run(new_run())
    (got,) = await store.claim("w", 30, 1)
    await notes.take()
    c = await store.request_cancel(running.id, "user")
    assert c is not None and c.status == RunStatus.CANCELLING and c.worker_id == "w"
    assert await notes.take() == notes_of(running.id, EVENTS, CONTROL, QUEUE, STATUS)
    held = await store.renew("w", 30)
    assert held[0].status == RunStatus.CANCELLING
    twice = await store.request_cancel(running.id, "user")
    assert twice is not None and twice.status == RunStatus.CANCELLING
    lease = Lease(running.id, "w", got.lease_epoch)
    await store.finish(lease, RunStatus.CANCELLED, EventDraft(EventType.RUN_CANCELLED, {}))
    types = [e.type for e in await store.read_events(running.id, 0, 100)]
    assert types == [
        EventType.RUN_CREATED,
        EventType.RUN_STARTED,
        EventType.RUN_CANCELLING,
        EventType.RUN_CANCELLED,
    ]
    assert await store.request_cancel(UNKNOWN, "x") is None


async def test_cancelled_queued_run_unblocks_its_thread(store: Store) -> None:
    first, _ = await store.create_run(new_run(thread_id="T"))
    second, _ = await store.create_run(new_run(thread_id="T"))
    await store.request_cancel(first.id, "x")
    (got,) = await store.claim("w", 30, 10)
    assert got.id == second.id
