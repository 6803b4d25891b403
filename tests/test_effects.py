"""The effects ledger: a resumed or recovered run never sends the same email twice."""

from __future__ import annotations

import json
from pathlib import Path

from outlast.store import Store
from tests.harness import collect, post_run, serve, wait_result
from tests.test_waits import answer, wait_status


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


async def _crash_at(
    point: str, store: Store, db_url: str, tmp_path: Path, idempotent: bool
) -> tuple[str, Path, object]:
    import signal

    from outlast.runtime.accept import RunRequest, accept
    from tests.procs import start_worker

    outbox = tmp_path / "outbox.jsonl"
    run, _ = await accept(
        store,
        RunRequest(
            graph="mailer",
            input={},
            config={
                "configurable": {"outbox": str(outbox), "ask": False, "idempotent": idempotent}
            },
        ),
        graphs=["mailer"],
        max_attempts=3,
    )
    first = start_worker(db_url, tmp_path / "w1.log", OUTLAST_FAULTS=point)
    assert first.wait(timeout=30) == -signal.SIGKILL
    second = start_worker(db_url, tmp_path / "w2.log")
    return run.id, outbox, second


async def test_killed_after_done_the_email_is_sent_once(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    import signal

    from tests.procs import kill, wait_for_status

    run_id, outbox, second = await _crash_at("effect.after_done", store, db_url, tmp_path, False)
    try:
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(second, signal.SIGTERM)  # type: ignore[arg-type]
    assert final.status.value == "completed" and len(_lines(outbox)) == 1
    effects = await store.list_effects(run_id)
    assert [(e.status, e.calls) for e in effects] == [("done", 1)]


async def test_killed_before_done_an_idempotent_tool_runs_again_with_the_same_key(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    import signal

    from tests.procs import kill, wait_for_status

    run_id, outbox, second = await _crash_at("effect.after_call", store, db_url, tmp_path, True)
    try:
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(second, signal.SIGTERM)  # type: ignore[arg-type]
    assert final.status.value == "completed"
    keys = [line["key"] for line in _lines(outbox)]
    assert len(keys) == 2 and keys[0] == keys[1]  # called again, with the same key
    (effect,) = await store.list_effects(run_id)
    assert (effect.status, effect.calls) == ("done", 2)


async def test_killed_before_done_a_non_idempotent_tool_asks_a_person(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    import signal

    from tests.procs import kill, wait_for_status

    run_id, outbox, second = await _crash_at("effect.before_call", store, db_url, tmp_path, False)
    try:
        waiting = await wait_for_status(store, run_id, {"waiting"}, proc=second)
        (wait,) = await store.list_waits(waiting.id, "open")
        assert wait.kind == "reconciliation" and wait.object["tool"] == "send_email"
        assert _lines(outbox) == []  # killed before the call left the process
        await store.answer(run_id, wait.id, {"happened": False})  # "run it again"
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(second, signal.SIGTERM)  # type: ignore[arg-type]
    assert final.status.value == "completed" and len(_lines(outbox)) == 1
    events = [e.type for e in await store.read_events(run_id, 0, 1000)]
    assert "effect.unknown" in events


async def test_a_person_who_says_it_happened_is_believed(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    import signal

    from tests.procs import kill, wait_for_status

    run_id, outbox, second = await _crash_at("effect.after_call", store, db_url, tmp_path, False)
    try:
        waiting = await wait_for_status(store, run_id, {"waiting"}, proc=second)
        (wait,) = await store.list_waits(waiting.id, "open")
        await store.answer(run_id, wait.id, {"happened": True, "result": {"sent": "by hand"}})
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(second, signal.SIGTERM)  # type: ignore[arg-type]
    assert final.status.value == "completed" and len(_lines(outbox)) == 1  # not sent again
    assert final.result["got"]["sent"] == {"sent": "by hand"}


async def test_reconcile_decides_an_unfinished_call(store: Store) -> None:
    from outlast.runtime.effects import RunLedger
    from outlast.runtime.sink import EventSink
    from outlast.store import Lease
    from tests.util import new_run

    run, _ = await store.create_run(new_run())
    (claimed,) = await store.claim("w", 30, 1)
    sink = EventSink(store, Lease(run.id, "w", claimed.lease_epoch), lambda exc: None)
    ledger = RunLedger(store, run.id, sink)
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
