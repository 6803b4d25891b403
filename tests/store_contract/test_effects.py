"""The effects ledger: ``started`` committed before a call leaves, its result after; a key
seen again returns what the ledger holds instead of a second call; what undoes an effect
and what an undoing undoes; and ``set_ending``, its one fenced write."""

from __future__ import annotations

import pytest

from outlast.errors import LeaseLost
from outlast.store import Lease, Store
from tests.store_contract.support import Notes, claimed, events_after
from tests.util import new_run

ENDING = {"status": "failed", "error": {"type": "Boom", "message": "no"}}


async def test_begin_finish_retry_list(store: Store, notes: Notes) -> None:
    run, _ = await claimed(store)
    await notes.take()
    first, fresh = await store.effect_begin(run.id, "k1", "charge", "h1", {"amount": 5}, False)
    assert fresh and first.status == "started" and first.calls == 1
    assert (first.tool, first.args_hash, first.args, first.idempotent) == (
        "charge",
        "h1",
        {"amount": 5},
        False,
    )
    assert first.result is None and first.finished_at is None
    again, fresh = await store.effect_begin(run.id, "k1", "charge", "h2", {"amount": 6}, True)
    assert not fresh and again.args == {"amount": 5}  # the ledger's, not the new call's
    done = await store.effect_finish(run.id, "k1", "done", result={"id": "ch_1"})
    assert done.status == "done" and done.result == {"id": "ch_1"}
    assert done.finished_at is not None and done.error is None
    public = done.public()
    assert set(public) == {
        "key",
        "tool",
        "args",
        "args_hash",
        "idempotent",
        "status",
        "result",
        "error",
        "calls",
        "compensable",
        "compensates",
        "started_at",
        "finished_at",
    }
    failed = await store.effect_finish(run.id, "k1", "failed", error="timeout")
    assert failed.status == "failed" and failed.error == "timeout"
    retried = await store.effect_retry(run.id, "k1")
    assert retried.status == "started" and retried.calls == 2 and retried.error is None
    await store.effect_begin(run.id, "k2", "send", "h2", None, True)
    assert [e.key for e in await store.list_effects(run.id)] == ["k1", "k2"]
    assert await store.list_effects("00000000-0000-0000-0000-000000000000") == []
    # the ledger is not the log: the worker appends the effect.* events itself
    assert await events_after(store, run.id, run.last_seq) == []
    assert await notes.take() == set()


async def test_the_ledger_keeps_what_undoes_an_effect(store: Store) -> None:
    run, _ = await claimed(store)
    await store.effect_begin(run.id, "k1", "book", "h", {}, True, compensate="m:unbook")
    await store.effect_finish(run.id, "k1", "done", result={"booking": 7})
    undo, fresh = await store.effect_begin(
        run.id, "undo:k1", "unbook", "u", {"compensates": "k1"}, True, compensates="k1"
    )
    assert fresh and undo.compensates == "k1" and undo.compensate is None
    effect, undoing = await store.list_effects(run.id)
    assert (effect.compensate, effect.compensates) == ("m:unbook", None)
    assert effect.public()["compensable"] and not undoing.public()["compensable"]
    assert undoing.public()["compensates"] == "k1"


async def test_set_ending_is_fenced_recorded_and_silent(store: Store, notes: Notes) -> None:
    run, lease = await claimed(store)
    await notes.take()
    stale = Lease(run.id, lease.worker_id, lease.epoch + 1)
    with pytest.raises(LeaseLost):
        await store.set_ending(stale, ENDING)
    before = await store.get_run(run.id)
    assert before is not None and before.ending is None
    await store.set_ending(lease, ENDING)
    after = await store.get_run(run.id)
    assert after is not None and after.ending == ENDING
    # a decision, not a transition: the run still runs, nothing is appended, nobody woken
    assert after.status == run.status and after.last_seq == run.last_seq
    assert await notes.take() == set()


async def test_a_call_starts_only_while_the_lease_is_held(store: Store) -> None:
    """A worker that lost its run (partitioned past its lease, frozen, taken over) starts
    no effect: the write that must precede a call is refused, and records nothing."""
    run, _ = await store.create_run(new_run())
    (run,) = await store.claim("w", -1, 1)  # a lease already past, on database time
    stale = Lease(run.id, "w", run.lease_epoch)
    first, fresh = await store.effect_begin(run.id, "k1", "charge", "h", {}, False, lease=stale)
    assert fresh and first.status == "started"  # still held: nobody took it yet
    await store.effect_finish(run.id, "k1", "failed", error="boom")
    await store.reap()
    (again,) = await store.claim("w2", 30, 1)
    with pytest.raises(LeaseLost):
        await store.effect_begin(run.id, "k2", "send", "h", {}, False, lease=stale)
    with pytest.raises(LeaseLost):
        await store.effect_retry(run.id, "k1", stale)
    assert [(e.key, e.status, e.calls) for e in await store.list_effects(run.id)] == [
        ("k1", "failed", 1)
    ]
    held = Lease(run.id, "w2", again.lease_epoch)
    retried = await store.effect_retry(run.id, "k1", held)
    assert (retried.status, retried.calls) == ("started", 2)
    _, fresh = await store.effect_begin(run.id, "k2", "send", "h", {}, False, lease=held)
    assert fresh
