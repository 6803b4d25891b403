"""The effects ledger: a resumed or recovered run never sends the same email twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from outlast.store import Store
from tests.harness import answer, collect, post_run, serve, wait_result, wait_status
from tests.procs import after_fault, wait_for_status


def _lines(outbox: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in outbox.read_text().splitlines()] if outbox.exists() else []


async def test_an_interrupt_after_an_effect_does_not_repeat_it_on_resume(
    store: Store, tmp_path: Path
) -> None:
    outbox = tmp_path / "outbox.jsonl"
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="mailer", input={}, config={"configurable": {"outbox": str(outbox)}}
        )
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        assert len(_lines(outbox)) == 1
        ledger = (await srv.client.get(f"/v1/runs/{run['id']}/effects")).json()["effects"]
        assert [(e["tool"], e["status"], e["calls"]) for e in ledger] == [("send_email", "done", 1)]
        assert ledger[0]["result"] == {"sent": True, "key": ledger[0]["key"]}
        assert (await answer(srv, run["id"], wait["id"], "yes")).status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed"
        assert len(_lines(outbox)) == 1  # the node ran again; the email did not go again
        assert final["result"]["got"]["sent"]["key"] == _lines(outbox)[0]["key"]
        types = [e.event for e in await collect(srv.client, run["id"])]
        assert types.count("effect.started") == 1 and types.count("effect.done") == 1
        assert types.count("effect.replayed") == 1


async def test_the_same_key_with_other_arguments_is_refused_loudly(
    store: Store, tmp_path: Path
) -> None:
    outbox = tmp_path / "outbox.jsonl"
    async with serve(store) as srv:
        run = await post_run(
            srv.client,
            graph="mailer",
            input={},
            config={"configurable": {"outbox": str(outbox), "fickle": True}},
        )
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        await answer(srv, run["id"], wait["id"], "yes")
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
        assert final["error"]["type"] == "EffectArgumentsChanged"
        assert len(_lines(outbox)) == 1  # neither replayed as if equal, nor sent again


async def test_effects_of_an_unknown_run_are_404(store: Store) -> None:
    async with serve(store) as srv:
        response = await srv.client.get("/v1/runs/00000000-0000-0000-0000-000000000000/effects")
        assert response.status_code == 404
        assert response.headers["content-type"] == "application/problem+json"


# -- crashes at each fault point: real worker processes, SIGKILL ---------------------------


async def _mail(store: Store, tmp_path: Path, idempotent: bool) -> tuple[str, Path]:
    from outlast.runtime.accept import RunRequest
    from tests.util import accept

    outbox = tmp_path / "outbox.jsonl"
    conf = {"outbox": str(outbox), "ask": False, "idempotent": idempotent}
    run, _ = await accept(
        store,
        RunRequest(graph="mailer", input={}, config={"configurable": conf}),
        graphs=["mailer"],
        max_attempts=3,
    )
    return run.id, outbox


async def test_killed_after_done_the_email_is_sent_once(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    run_id, outbox = await _mail(store, tmp_path, idempotent=False)
    async with after_fault(db_url, tmp_path, "effect.after_done") as second:
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    assert final.status.value == "completed" and len(_lines(outbox)) == 1
    effects = await store.list_effects(run_id)
    assert [(e.status, e.calls) for e in effects] == [("done", 1)]


async def test_killed_before_done_an_idempotent_tool_runs_again_with_the_same_key(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    run_id, outbox = await _mail(store, tmp_path, idempotent=True)
    async with after_fault(db_url, tmp_path, "effect.after_call") as second:
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    assert final.status.value == "completed"
    keys = [line["key"] for line in _lines(outbox)]
    assert len(keys) == 2 and keys[0] == keys[1]  # called again, with the same key
    (effect,) = await store.list_effects(run_id)
    assert (effect.status, effect.calls) == ("done", 2)


async def _reconcile_by_hand(store: Store, run_id: str, second: Any, value: dict[str, Any]) -> Any:
    """Wait for the reconciliation wait, answer it as a person would, await the end."""
    waiting = await wait_for_status(store, run_id, {"waiting"}, proc=second)
    (wait,) = await store.list_waits(waiting.id, "open")
    assert wait.kind == "reconciliation" and wait.object["tool"] == "send_email"
    await store.answer(run_id, wait.id, value)
    return await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)


async def test_killed_before_done_a_non_idempotent_tool_asks_a_person(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    run_id, outbox = await _mail(store, tmp_path, idempotent=False)
    async with after_fault(db_url, tmp_path, "effect.before_call") as second:
        # killed before the call left the process; the person says: run it again
        final = await _reconcile_by_hand(store, run_id, second, {"happened": False})
    assert final.status.value == "completed" and len(_lines(outbox)) == 1
    events = [e.type for e in await store.read_events(run_id, 0, 1000)]
    assert "effect.unknown" in events


async def test_a_person_who_says_it_happened_is_believed(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    run_id, outbox = await _mail(store, tmp_path, idempotent=False)
    async with after_fault(db_url, tmp_path, "effect.after_call") as second:
        answer_ = {"happened": True, "result": {"sent": "by hand"}}
        final = await _reconcile_by_hand(store, run_id, second, answer_)
    assert final.status.value == "completed" and len(_lines(outbox)) == 1  # not sent again
    assert final.result["got"]["sent"] == {"sent": "by hand"}


async def test_reconcile_decides_an_unfinished_call(store: Store) -> None:
    from outlast.runtime.effects import RunLedger
    from outlast.runtime.sink import EventSink
    from outlast.store import Lease
    from tests.util import new_run

    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", 30, 1)
    lease = Lease(run.id, "w", claimed.lease_epoch)
    sink = EventSink(store, lease, lambda exc: None)
    ledger = RunLedger(store, lease, sink)
    calls: list[str] = []

    async def call(key: str) -> str:
        calls.append(key)
        return "called"

    args = {"args": ["x"], "kwargs": {}}
    for key, verdict, expected in [
        ("k-done", ("done", "it happened"), "it happened"),
        ("k-again", "not_done", "called"),
    ]:
        await store.effect_begin(run.id, key, "charge", _hash(args), args, False)  # a crash

        async def reconcile(k: str, a: object, verdict: object = verdict) -> object:
            return verdict

        result = await ledger.run_effect(
            key=key, tool="charge", args=args, idempotent=False, call=call, reconcile=reconcile
        )
        assert result == expected
    assert calls == ["k-again"]  # only the call reconcile said did not happen
    statuses = {e.key: (e.status, e.calls) for e in await store.list_effects(run.id)}
    assert statuses == {"k-done": ("done", 1), "k-again": ("done", 2)}
    await sink.close()


def _hash(args: object) -> str:
    import hashlib

    return hashlib.sha256(
        json.dumps(args, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def test_a_langchain_tool_does_not_show_the_key_to_the_model() -> None:
    from tests.graphs import open_ticket

    schema = open_ticket.tool_call_schema.model_json_schema()
    assert set(schema["properties"]) == {"title", "outbox"}


async def test_a_langchain_tool_is_keyed_by_its_tool_call_id(store: Store, tmp_path: Path) -> None:
    outbox = tmp_path / "tickets.jsonl"
    async with serve(store) as srv:
        run = await post_run(
            srv.client,
            graph="ticketing",
            input={},
            config={"configurable": {"outbox": str(outbox)}},
        )
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        await answer(srv, run["id"], wait["id"], "no")
        final = await wait_result(srv.client, run["id"])
        assert final["result"]["got"]["tool"] == "ticket for 'printer on fire'"
        (line,) = _lines(outbox)  # opened once although the node ran twice
        assert line["call"] == "call-42"
        (effect,) = (await srv.client.get(f"/v1/runs/{run['id']}/effects")).json()["effects"]
        assert effect["key"] == line["key"] and effect["status"] == "done"


async def test_a_worker_that_lost_its_run_calls_nothing(store: Store) -> None:
    """Partitioned past its lease (or frozen), a worker's node may still reach an effect
    when it comes back: the run is another's by then, and the call is never made."""
    from outlast.errors import LeaseLost
    from outlast.runtime.effects import RunLedger
    from outlast.runtime.sink import EventSink
    from outlast.store import Lease
    from tests.util import new_run

    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", -1, 1)  # its lease already past
    stale = Lease(run.id, "w", claimed.lease_epoch)
    await store.reap()
    await store.claim("w2", 30, 1)  # another worker has the run now
    sink = EventSink(store, stale, lambda exc: None)
    calls: list[str] = []

    async def call(key: str) -> str:
        calls.append(key)
        return "sent"

    with pytest.raises(LeaseLost):
        await RunLedger(store, stale, sink).run_effect(
            key="k", tool="send", args={}, idempotent=False, call=call, reconcile=None
        )
    assert calls == [] and await store.list_effects(run.id) == []
    await sink.close()
