"""Runs on a thread (``/v1/threads``): a new run refused while the thread is busy unless
it queues behind, its idempotency key replayed, and the thread's latest run."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from outlast.errors import ThreadBusy, ThreadUnavailable
from outlast.store import Claimant, NewRun, Store
from outlast.store.hub import QUEUE
from outlast.vocabulary import RunStatus
from tests.store_contract.support import (
    CREATED,
    Notes,
    assert_seqs,
    notes_of,
    shape,
    status_of,
)
from tests.util import lg_run_of, new_run


async def test_thread_run_refused_while_busy_unless_enqueued(store: Store, notes: Notes) -> None:
    first, created = await store.create_thread_run(new_run(thread_id="T"), if_busy="reject")
    assert created and first.status == RunStatus.QUEUED
    assert await notes.take() == notes_of(first.id, QUEUE)
    with pytest.raises(ThreadBusy):
        await store.create_thread_run(new_run(thread_id="T"), if_busy="reject")
    assert await notes.take() == set()
    second, created = await store.create_thread_run(new_run(thread_id="T"), if_busy="enqueue")
    assert created and second.status == RunStatus.QUEUED
    assert shape(await store.read_events(second.id, 0, 10)) == [CREATED]
    latest = await store.latest_run("T")
    assert latest is not None and latest.id == second.id
    assert await store.latest_run("nowhere") is None
    await store.request_cancel(first.id, "x")
    await store.request_cancel(second.id, "x")
    third, _ = await store.create_thread_run(new_run(thread_id="T"), if_busy="reject")
    assert await status_of(store, third.id) == RunStatus.QUEUED


async def test_thread_run_replays_its_idempotency_key(store: Store) -> None:
    first, _ = await store.create_thread_run(new_run(thread_id="T", key="k"), if_busy="enqueue")
    again, created = await store.create_thread_run(
        new_run(thread_id="T", key="k"), if_busy="enqueue"
    )
    assert not created and again.id == first.id
    assert_seqs(await store.read_events(first.id, 0, 10), 1)


async def test_a_run_is_never_attached_to_another_owners_thread(store: Store) -> None:
    """The insert itself refuses, on every way a run is written (alone, on a busy-checked
    thread, as a LangGraph run, started eagerly): whatever its caller checked first, a run
    of bob's on alice's thread is not written, and her thread is untouched."""
    await store.lg_create_thread("alices", "alice", {"secret": 1})
    before = (await store.lg_threads(thread_id="alices"))[0]

    def bobs(**changes: Any) -> NewRun:
        return dataclasses.replace(new_run(thread_id="alices"), principal="bob", **changes)

    ways: list[Callable[[NewRun], Awaitable[object]]] = [
        store.create_run,
        lambda new: store.create_thread_run(new, if_busy="enqueue"),
        lambda new: store.lg_create_run(
            new, lg_run_of(new), strategy="enqueue", supersede_reason="x"
        ),
    ]
    for way in ways:
        for new in (bobs(), bobs(claim_for=Claimant("we", 30)), bobs(thread_owner="bob")):
            with pytest.raises(ThreadUnavailable):
                await way(new)
            assert await store.get_run(new.id) is None
    assert await store.latest_run("alices") is None
    after = (await store.lg_threads(thread_id="alices"))[0]
    assert (after.principal, after.metadata, after.updated_at) == (
        "alice",
        {"secret": 1},
        before.updated_at,
    )
    # the owner runs on it, and so does another principal the owner's rule admitted
    # (an app's auth.py sharing it: thread_owner names the owner it expects)
    mine, created = await store.create_run(
        dataclasses.replace(new_run(thread_id="alices"), principal="alice")
    )
    assert created and mine.thread_id == "alices"
    shared, created = await store.create_thread_run(bobs(thread_owner="alice"), if_busy="enqueue")
    assert created and shared.principal == "bob"
    # a run that makes its thread makes it its principal's
    made, _ = await store.create_run(
        dataclasses.replace(new_run(thread_id="bobs-new"), principal="bob")
    )
    assert (await store.lg_threads(thread_id="bobs-new"))[0].principal == "bob"
    assert made.thread_id == "bobs-new"
