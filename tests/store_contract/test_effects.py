"""The effects ledger: ``started`` committed before a call leaves, its result after; a key
seen again returns what the ledger holds instead of a second call."""

from __future__ import annotations

from outlast.store import Store
from tests.store_contract.support import Notes, claimed, events_after


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
