"""Threads and LangGraph runs (store/lgthreads.py ``LangGraphOps``): a thread exists before
its first run, a new run on a busy thread follows its multitask strategy, and a resume is
a new LangGraph run over the same outlast run."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from outlast.errors import ThreadBusy, WaitNotOpen
from outlast.store import Lease, LgRun, NewRun, Store, WaitSpec
from outlast.store.base import system_assistant_id
from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS
from outlast.vocabulary import EventType, RunStatus, WaitKind, WaitStatus
from tests.store_contract.support import (
    Notes,
    assert_seqs,
    events_after,
    notes_of,
    shape,
    status_of,
)
from tests.util import lg_run_of, new_run

ASSISTANT = system_assistant_id("steps")


async def _lg_run(
    store: Store, thread: str, strategy: str = "reject", key: str | None = None
) -> tuple[LgRun, NewRun]:
    new = new_run(thread_id=thread, key=key)
    lg, run, created = await store.lg_create_run(
        new, lg_run_of(new), strategy=strategy, supersede_reason="new input"
    )
    assert created == (run.id == new.id)
    return lg, new


async def test_threads_exist_before_their_runs(store: Store, notes: Notes) -> None:
    thread, created = await store.lg_create_thread("T1", "alice", {"topic": "x", "n": [1, 2]})
    assert created and thread.thread_id == "T1" and thread.principal == "alice"
    assert thread.metadata == {"topic": "x", "n": [1, 2]} and thread.run_id is None
    again, created = await store.lg_create_thread("T1", "bob", {})
    assert not created and again.principal == "alice"  # whoever owns it
    await store.lg_create_thread("T2", "bob", {"topic": "y"})
    assert [t.thread_id for t in await store.lg_threads(principal="alice")] == ["T1"]
    assert [t.thread_id for t in await store.lg_threads(thread_id="T2")] == ["T2"]
    found = await store.lg_threads(metadata={"n": [2]})
    assert [t.thread_id for t in found] == ["T1"]  # containment, as Postgres' @>
    assert await store.lg_threads(metadata={"topic": "z"}) == []
    merged = await store.lg_set_thread_metadata("T1", {"n": 3, "new": True})
    assert merged is not None and merged.metadata == {"topic": "x", "n": 3, "new": True}
    assert await store.lg_set_thread_metadata("nowhere", {"a": 1}) is None
    assert await notes.take() == set()


async def test_a_thread_shows_its_latest_run_and_whether_it_asks(store: Store) -> None:
    await store.lg_create_thread("T", "", {})
    _, new = await _lg_run(store, "T")
    (thread,) = await store.lg_threads(thread_id="T")
    assert thread.run_id == new.id and thread.run_status == RunStatus.QUEUED
    assert thread.run_graph == new.graph and not thread.asking
    assert thread.metadata == {"graph_id": new.graph, "assistant_id": ASSISTANT}
    (claimed,) = await store.claim("w", 30, 1)
    await store.park(Lease(new.id, "w", claimed.lease_epoch), [WaitSpec("i", WaitKind.HUMAN)], 0)
    (thread,) = await store.lg_threads(thread_id="T")
    assert thread.run_status == RunStatus.WAITING and thread.asking


async def test_create_run_strategies(store: Store, notes: Notes) -> None:
    first, new1 = await _lg_run(store, "T")
    assert (first.id, first.run_id, first.from_seq) == (new1.id, new1.id, 0)
    assert await store.lg_get_run(first.id) == first
    assert await store.lg_get_run(str(uuid.uuid4())) is None
    await notes.take()
    with pytest.raises(ThreadBusy):
        await _lg_run(store, "T", "reject")
    assert await notes.take() == set()
    _, new2 = await _lg_run(store, "T", "enqueue")
    assert await notes.take() == notes_of(new2.id, QUEUE)
    assert await status_of(store, new1.id) == RunStatus.QUEUED
    # interrupt cancels every active run of the thread (a queued one at once)
    _, new3 = await _lg_run(store, "T", "interrupt")
    assert await status_of(store, new1.id) == RunStatus.CANCELLED
    assert await status_of(store, new2.id) == RunStatus.CANCELLED
    log = await store.read_events(new1.id, 0, 10)
    assert_seqs(log, 1)  # the cancel's event follows without a hole
    assert shape(log[-1:]) == [(EventType.RUN_CANCELLED, {"status", "reason"})]
    cancelled = notes_of(new1.id, EVENTS, CONTROL, QUEUE, STATUS)
    assert await notes.take() == cancelled | notes_of(new2.id, EVENTS, CONTROL, QUEUE, STATUS) | {
        (QUEUE, new3.id)
    }
    assert not (await store.lg_get_run(first.id)).deleted  # type: ignore[union-attr]
    # rollback also hides the LangGraph runs of what it cancelled
    (claimed,) = await store.claim("w", 30, 1)
    assert claimed.id == new3.id
    _, new4 = await _lg_run(store, "T", "rollback")
    run3 = await store.get_run(new3.id)
    assert run3 is not None and run3.status == RunStatus.CANCELLING  # its worker ends it
    assert (await store.lg_get_run(new3.id)).deleted  # type: ignore[union-attr]
    assert new4.id in {r.id for r in await store.lg_runs_of_thread("T")}


async def test_new_input_supersedes_an_asking_run(store: Store) -> None:
    _, new = await _lg_run(store, "T")
    (claimed,) = await store.claim("w", 30, 1)
    await store.park(Lease(new.id, "w", claimed.lease_epoch), [WaitSpec("i", WaitKind.HUMAN)], 0)
    _, after = await _lg_run(store, "T", "reject")  # not busy: the asking run gives way
    old = await store.get_run(new.id)
    assert old is not None and old.status == RunStatus.CANCELLED
    assert old.error is not None and old.error["type"] == "superseded"
    assert [w.status for w in await store.list_waits(new.id)] == [WaitStatus.WITHDRAWN]
    assert await status_of(store, after.id) == RunStatus.QUEUED


async def test_create_run_replays_its_key_touching_nothing(store: Store, notes: Notes) -> None:
    first, new = await _lg_run(store, "T", key="k")
    await notes.take()
    again = new_run(thread_id="T", key="k")
    lg, run, created = await store.lg_create_run(
        again, lg_run_of(again), strategy="interrupt", supersede_reason="x"
    )
    assert not created and lg.id == first.id and run.id == new.id
    assert await status_of(store, new.id) == RunStatus.QUEUED  # not interrupted by itself
    assert await notes.take() == set()


async def test_resume_opens_the_next_stretch(store: Store, notes: Notes) -> None:
    first, new = await _lg_run(store, "T")
    (claimed,) = await store.claim("w", 30, 1)
    specs = [WaitSpec("i-1", WaitKind.HUMAN), WaitSpec("i-2", WaitKind.HUMAN)]
    await store.park(Lease(new.id, "w", claimed.lease_epoch), specs, 0)
    waits = await store.list_waits(new.id)
    parked = await store.get_run(new.id)
    assert parked is not None
    await notes.take()
    draft = lg_run_of(new, id=str(uuid.uuid4()), idempotency_key="r1")
    lg, fresh = await store.lg_resume(new.id, {w.id: i for i, w in enumerate(waits)}, draft)
    assert fresh and lg.run_id == new.id and lg.from_seq == parked.last_seq
    events = await events_after(store, new.id, parked.last_seq)
    # the first answer requeues the run; all land in one transaction
    assert [e.type for e in events] == [
        EventType.WAIT_ENDED,
        EventType.RUN_QUEUED,
        EventType.WAIT_ENDED,
    ]
    assert {events[0].data["how"], events[2].data["how"]} == {"resume"}
    assert await status_of(store, new.id) == RunStatus.QUEUED
    assert await notes.take() == notes_of(new.id, EVENTS, QUEUE, STATUS)
    replay, fresh = await store.lg_resume(new.id, {waits[0].id: 0}, draft)
    assert not fresh and replay.id == lg.id
    assert await store.lg_run_by_key(new.principal, "r1") == lg
    assert await store.lg_run_by_key("someone else", "r1") is None
    assert await store.lg_run_by_key(new.principal, "r2") is None
    assert [r.id for r in await store.lg_runs_of_run(new.id)] == [first.id, lg.id]
    await store.lg_delete_runs_of(new.id)
    assert all(r.deleted for r in await store.lg_runs_of_run(new.id))


async def test_a_resume_keeps_its_update_and_goto_with_its_answers(store: Store) -> None:
    _, new = await _lg_run(store, "T")
    (claimed,) = await store.claim("w", 30, 1)
    await store.park(Lease(new.id, "w", claimed.lease_epoch), [WaitSpec("i", WaitKind.HUMAN)], 0)
    (wait,) = await store.list_waits(new.id)
    with_ = {"update": {"k": [1, "é"]}, "goto": {"node": "n", "input": None}}
    await store.lg_resume(new.id, {wait.id: "yes"}, lg_run_of(new, id=str(uuid.uuid4())), with_)
    run = await store.get_run(new.id)
    assert run is not None and run.options is not None
    assert run.options["resume_with"] == {**with_, "waits": [wait.id]}
    assert {k: v for k, v in run.options.items() if k != "resume_with"} == (new.options or {})


async def test_two_resumes_of_one_interrupt_one_lands(store: Store) -> None:
    _, new = await _lg_run(store, "T")
    (claimed,) = await store.claim("w", 30, 1)
    await store.park(Lease(new.id, "w", claimed.lease_epoch), [WaitSpec("i", WaitKind.HUMAN)], 0)
    (wait,) = await store.list_waits(new.id)
    results = await asyncio.gather(
        *(
            store.lg_resume(new.id, {wait.id: i}, lg_run_of(new, id=str(uuid.uuid4())))
            for i in range(2)
        ),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["WaitNotOpen", "tuple"]
    assert any(isinstance(r, WaitNotOpen) for r in results)
    assert len(await store.lg_runs_of_run(new.id)) == 2


async def test_runs_of_a_thread_include_native_runs(store: Store) -> None:
    lg, _ = await _lg_run(store, "T", "enqueue")
    native, _ = await store.create_run(new_run(thread_id="T"))
    runs = await store.lg_runs_of_thread("T")
    assert {r.id for r in runs} == {lg.id, native.id}
    (plain,) = [r for r in runs if r.id == native.id]
    assert plain.run_id == native.id and plain.assistant_id == ASSISTANT
    assert await store.lg_runs_of_thread("nowhere") == []


async def test_delete_thread_stops_its_runs_and_forgets_them(store: Store, notes: Notes) -> None:
    await store.lg_create_thread("T", "", {})
    _, new = await _lg_run(store, "T")
    await store.claim("w", 30, 1)
    await notes.take()
    assert await store.lg_delete_thread("T")
    assert await notes.take() == notes_of(new.id, CONTROL)  # its worker looks at once
    assert await store.get_run(new.id) is None
    assert await store.read_events(new.id, 0, 10) == []
    assert await store.lg_threads(thread_id="T") == []
    assert await store.renew("w", 30) == []  # the worker lost its lease with the row
    assert not await store.lg_delete_thread("T")


async def test_temporary_threads_expire_after_their_runs_end(store: Store) -> None:
    new = new_run(thread_id="tmp")
    await store.lg_create_run(
        new, lg_run_of(new), strategy="reject", supersede_reason="x", temporary=True
    )
    await _lg_run(store, "kept")
    assert await store.lg_expire_temporary(-1) == []  # its run is still active
    await store.request_cancel(new.id, "done")
    assert await store.lg_expire_temporary(3600) == []  # ended, but not long enough ago
    assert await store.lg_expire_temporary(-1) == ["tmp"]
    assert await store.get_run(new.id) is None
    assert await store.lg_threads(thread_id="tmp") == []
    assert [t.thread_id for t in await store.lg_threads()] == ["kept"]
