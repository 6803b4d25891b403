"""Runs on a thread (``/v1/threads``): a new run refused while the thread is busy unless
it queues behind, its idempotency key replayed, and the thread's latest run."""

from __future__ import annotations

import pytest

from outlast.errors import ThreadBusy
from outlast.store import Store
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
from tests.util import new_run


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
