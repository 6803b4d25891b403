"""Eager start (``NewRun.claim_for``, runtime/eager.py): a run accepted by a process whose
worker has a slot is claimed in the acceptance transaction, when and only when it may
start at once, on every way a run is created."""

from __future__ import annotations

import asyncio
import dataclasses

from outlast.store import Claimant, EventDraft, Lease, NewRun, Run, Store
from outlast.store.hub import QUEUE
from outlast.vocabulary import EventType, RunStatus
from tests.store_contract.support import Notes, claimed, notes_of, shape
from tests.util import lg_run_of, new_run

CREATED = (EventType.RUN_CREATED, {"status", "graph", "thread_id"})
STARTED = (EventType.RUN_STARTED, {"status", "attempt", "worker_id", "epoch"})


def eager(new: NewRun, worker: str = "we") -> NewRun:
    return dataclasses.replace(new, claim_for=Claimant(worker, 30))


async def assert_started_eagerly(store: Store, run: Run, worker: str = "we") -> None:
    assert run.status == RunStatus.RUNNING and run.worker_id == worker
    assert run.attempts == 1 and run.lease_epoch == 1 and run.last_seq == 2
    assert run.lease_expires_at is not None
    events = await store.read_events(run.id, 0, 10)
    assert shape(events) == [CREATED, STARTED]
    assert events[1].data == {
        "status": RunStatus.RUNNING,
        "attempt": 1,
        "worker_id": worker,
        "epoch": 1,
    }
    # the lease is a real one: the worker's writes pass the fence
    await store.finish(
        Lease(run.id, worker, run.lease_epoch),
        RunStatus.COMPLETED,
        EventDraft(EventType.RUN_COMPLETED, {}),
    )


async def test_an_idle_threads_run_is_claimed_as_it_is_accepted(store: Store, notes: Notes) -> None:
    run, created = await store.create_run(eager(new_run()))
    assert created
    assert await store.claim("other", 30, 10) == []  # it never was in the queue
    assert await notes.take() == set()  # nobody is woken for a run already taken
    await assert_started_eagerly(store, run)


async def test_a_busy_threads_run_queues_as_without_it(store: Store, notes: Notes) -> None:
    first, _ = await claimed(store, new_run(thread_id="T"))
    await notes.take()
    behind, created = await store.create_run(eager(new_run(thread_id="T")))
    assert created and behind.status == RunStatus.QUEUED and behind.last_seq == 1
    assert behind.worker_id is None and behind.attempts == 0
    assert await notes.take() == notes_of(behind.id, QUEUE)
    # an older queued run of the thread keeps a new one queued too, whatever its age
    third, _ = await store.create_run(eager(new_run(thread_id="T")))
    assert third.status == RunStatus.QUEUED
    await store.finish(
        Lease(first.id, "w", first.lease_epoch),
        RunStatus.COMPLETED,
        EventDraft(EventType.RUN_COMPLETED, {}),
    )
    assert [r.id for r in await store.claim("w", 30, 10)] == [behind.id]  # in order


async def test_a_replayed_key_returns_the_run_and_claims_nothing(store: Store) -> None:
    first, created = await store.create_run(eager(new_run(key="k")))
    assert created and first.status == RunStatus.RUNNING
    again, created_again = await store.create_run(eager(new_run(key="k"), worker="other"))
    assert not created_again and again.id == first.id and again.worker_id == "we"
    assert again.lease_epoch == 1 and again.last_seq == 2


async def test_thread_runs_and_langgraph_runs_start_eagerly_too(store: Store) -> None:
    thread_run, _ = await store.create_thread_run(eager(new_run(thread_id="A")), if_busy="reject")
    await assert_started_eagerly(store, thread_run)
    new = eager(new_run(thread_id="B"))
    _, lg_run, created = await store.lg_create_run(
        new, lg_run_of(new), strategy="reject", supersede_reason="new input"
    )
    assert created
    await assert_started_eagerly(store, lg_run)
    busy, _ = await store.create_thread_run(eager(new_run(thread_id="B")), if_busy="reject")
    assert busy.status == RunStatus.RUNNING  # B's first run is over
    enqueued, _ = await store.create_thread_run(eager(new_run(thread_id="B")), if_busy="enqueue")
    assert enqueued.status == RunStatus.QUEUED
    new = eager(new_run(thread_id="B"))
    _, lg_queued, _ = await store.lg_create_run(
        new, lg_run_of(new), strategy="enqueue", supersede_reason="new input"
    )
    assert lg_queued.status == RunStatus.QUEUED


async def test_concurrent_eager_runs_of_one_thread_start_one_at_a_time(store: Store) -> None:
    """Each acceptance checks the thread under its lock: without it, concurrent ones
    would each find no other run and all start. (The threads exist already: a thread's
    first insert is serialized by its unique key anyway.)"""
    for thread in ("C1", "C2", "C3"):
        _, lease = await claimed(store, new_run(thread_id=thread))
        await store.finish(lease, RunStatus.COMPLETED, EventDraft(EventType.RUN_COMPLETED, {}))
        results = await asyncio.gather(
            *(store.create_run(eager(new_run(thread_id=thread), f"w{i}")) for i in range(12))
        )
        statuses = sorted(run.status for run, _ in results)
        assert statuses.count(RunStatus.RUNNING) == 1, statuses
        assert statuses.count(RunStatus.QUEUED) == 11
