"""Waiting as a first-class state, end to end over HTTP, on both backends."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from outlast.store import Store
from outlast.vocabulary import RunStatus
from tests.harness import (
    Server,
    answer,
    collect,
    eventually,
    make_settings,
    post_run,
    serve,
    sse_events,
    until_snapshot,
    wait_result,
    wait_status,
)


async def test_plain_interrupt_is_a_human_wait_answered_once(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        snap = await wait_status(srv.client, run["id"], "waiting")
        wait = snap["wait"]
        assert wait["kind"] == "human" and wait["prompt"] == "What is your name?"
        assert set(wait) >= {
            "id",
            "kind",
            "object",
            "since",
            "last_signal_at",
            "lease_expires_at",
            "renewals",
            "prompt",
            "schema",
        }
        assert snap["lease"] is None and snap["waits"] == [wait]  # no worker holds it
        assert srv.store is store and not _held(srv)
        bad = await answer(srv, run["id"], "00000000-0000-0000-0000-000000000000", "x")
        assert bad.status_code == 404 and bad.headers["content-type"] == "application/problem+json"
        ok = await answer(srv, run["id"], wait["id"], "Ada")
        assert ok.status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["result"]["greeting"] == "hello Ada"
        again = await answer(srv, run["id"], wait["id"], "Bob")
        assert again.status_code == 409 and "answered" in again.json()["detail"]
        types = [e.event for e in await collect(srv.client, run["id"])]
        assert types.count("wait.started") == 1 and types.count("wait.ended") == 1
        assert types.index("wait.started") < types.index("run.waiting") < types.index("wait.ended")
        assert types[-1] == "run.completed"


def _held(srv: Server) -> list[str]:
    return [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("run-")]


async def test_twenty_concurrent_answers_resume_once(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        responses = await asyncio.gather(
            *(answer(srv, run["id"], wait["id"], f"n{i}") for i in range(20))
        )
        codes = sorted(r.status_code for r in responses)
        assert codes == [202] + [409] * 19
        winner = next(i for i, r in enumerate(responses) if r.status_code == 202)
        final = await wait_result(srv.client, run["id"])
        events = await collect(srv.client, run["id"])
        types = [e.event for e in events]
        assert types.count("wait.ended") == 1 and types.count("run.started") == 2
        ended = next(e for e in events if e.event == "wait.ended")
        # the answer that took effect is the one that was told 202, not any of the 409s
        assert ended.data["data"]["value"] == f"n{winner}"
        assert final["result"]["greeting"] == f"hello n{winner}"


async def test_schema_mismatch_is_422_and_changes_nothing(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="human_typed")
        snap = await wait_status(srv.client, run["id"], "waiting")
        wait = snap["wait"]
        assert wait["schema"] == {"type": "integer", "minimum": 1}
        for value in ["three", 0, None, {"n": 3}]:
            response = await answer(srv, run["id"], wait["id"], value)
            assert response.status_code == 422, response.text
            assert response.headers["content-type"] == "application/problem+json"
        still = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
        assert still["status"] == "waiting" and still["last_seq"] == snap["last_seq"]
        assert (await answer(srv, run["id"], wait["id"], 3)).status_code == 202
        assert (await wait_result(srv.client, run["id"]))["result"] == {"got": 3}


async def test_reconnect_in_the_middle_of_a_wait_answered_while_nobody_watches(
    store: Store,
) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        seen = []
        async with srv.client.stream("GET", f"/v1/runs/{run['id']}/events") as response:
            async for event in sse_events(response):
                seen.append(event)
                if event.event == "run.waiting":
                    break  # the client goes away while the run waits
        wait = (await srv.client.get(f"/v1/runs/{run['id']}")).json()["wait"]
        assert (await answer(srv, run["id"], wait["id"], "Grace")).status_code == 202
        await wait_result(srv.client, run["id"])  # finished with nobody connected
        rest = await collect(srv.client, run["id"], last_event_id=seen[-1].id)
        full = await collect(srv.client, run["id"])
        assert [e.id for e in seen + rest] == [e.id for e in full]
        assert rest[0].event == "wait.ended" and rest[-1].event == "run.completed"


async def test_deadline_gives_the_default_answer(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="human_deadline")
        snap = await wait_status(srv.client, run["id"], "waiting")
        assert snap["wait"]["deadline"] is not None
        final = await wait_result(srv.client, run["id"])
        assert final["result"] == {"got": "proceed by default"}
        ended = [e for e in await collect(srv.client, run["id"]) if e.event == "wait.ended"]
        assert ended[0].data["data"]["how"] == "deadline"


async def test_timer_wakes_at_its_time(store: Store) -> None:
    async with serve(store) as srv:
        until = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=0.6)).isoformat()
        run = await post_run(srv.client, graph="sleeper", config={"configurable": {"until": until}})
        snap = await wait_status(srv.client, run["id"], "waiting")
        assert snap["wait"]["kind"] == "timer" and snap["wait"]["object"] == {"until": until}
        final = await wait_result(srv.client, run["id"])
        woke = dt.datetime.fromisoformat(final["result"]["got"])
        assert woke >= dt.datetime.fromisoformat(until) - dt.timedelta(milliseconds=50)


async def test_signal_wakes_every_run_waiting_on_its_key(store: Store) -> None:
    async with serve(store) as srv:
        k1 = [
            await post_run(srv.client, graph="eventual", config={"configurable": {"keys": ["k1"]}})
            for _ in range(3)
        ]
        k2 = await post_run(srv.client, graph="eventual", config={"configurable": {"keys": ["k2"]}})
        for run in [*k1, k2]:
            snap = await wait_status(srv.client, run["id"], "waiting")
            assert snap["wait"]["kind"] == "event"
        response = await srv.client.post("/v1/signals/k1", json={"payload": {"paid": True}})
        assert response.status_code == 200
        assert response.json()["woken"] == 3 and set(response.json()["runs"]) == {
            r["id"] for r in k1
        }
        for run in k1:
            final = await wait_result(srv.client, run["id"])
            assert final["result"]["got"] == {"key": "k1", "payload": {"paid": True}}
        assert (await srv.client.get(f"/v1/runs/{k2['id']}")).json()["status"] == "waiting"
        nobody = await srv.client.post("/v1/signals/k-unused")
        assert nobody.status_code == 200 and nobody.json()["woken"] == 0
        bad_input = await answer(
            srv, k2["id"], (await srv.client.get(f"/v1/runs/{k2['id']}")).json()["wait"]["id"], "x"
        )
        assert bad_input.status_code == 409  # an event wait is woken by a signal, not input


async def test_a_signal_sent_before_the_wait_exists_still_wakes_it(store: Store) -> None:
    async with serve(store) as srv:
        early = await srv.client.post("/v1/signals/early", json={"payload": 42})
        assert early.json()["woken"] == 0
        run = await post_run(
            srv.client, graph="eventual", config={"configurable": {"keys": ["other", "early"]}}
        )
        final = await wait_result(srv.client, run["id"])
        assert final["result"]["got"] == {"key": "early", "payload": 42}


async def test_external_wait_probes_renew_then_done(store: Store, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.write_text("pending")
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="external", config={"configurable": {"job": str(job)}}
        )
        snap = await wait_status(srv.client, run["id"], "waiting")
        assert snap["wait"]["kind"] == "external"
        assert snap["wait"]["object"] == {"provider": "acme", "job_id": str(job)}
        probes = Path(str(job) + ".probes")
        snap = await until_snapshot(
            srv.client, run["id"], lambda s: s["wait"]["renewals"] >= 2, what="two renewals"
        )
        assert snap["wait"]["last_signal_at"] is not None
        job.write_text("done:report.pdf")
        final = await wait_result(srv.client, run["id"])
        assert final["result"] == {"got": "report.pdf"}
        assert probes.read_text().split()[-1] == "done:report.pdf"
        types = [e.event for e in await collect(srv.client, run["id"])]
        assert types.count("wait.renewed") >= 2


async def test_external_wait_ends_with_a_reason_after_repeated_probe_failures(
    store: Store, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    job.write_text("error")
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="external", config={"configurable": {"job": str(job)}}
        )
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
        assert final["error"]["type"] == "ExternalWaitFailed"
        assert "3 probe failures in a row" in final["error"]["message"]
        assert "provider unreachable" in final["error"]["message"]


async def test_auth_wait(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="auth")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        assert wait["kind"] == "auth" and wait["object"] == {"scope": "github"}
        assert (await answer(srv, run["id"], wait["id"], "tok-123")).status_code == 202
        assert (await wait_result(srv.client, run["id"]))["result"] == {"got": "tok-123"}
        ended = [e for e in await collect(srv.client, run["id"]) if e.event == "wait.ended"]
        assert ended[0].data["data"]["value"] == "(redacted)"  # not in the event log


async def test_parallel_waits_are_answered_one_by_one(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="parallel")
        snap = await wait_status(srv.client, run["id"], "waiting")
        assert len(snap["waits"]) == 2
        by_prompt = {w["prompt"]: w for w in snap["waits"]}
        assert (await answer(srv, run["id"], by_prompt["left?"]["id"], "L")).status_code == 202
        # the run resumes with one answer and parks again on the other, same wait id
        snap = await until_snapshot(
            srv.client,
            run["id"],
            lambda s: s["status"] == "waiting" and len(s["waits"]) == 1,
            what="resumed with one answer, parked again on the other",
        )
        assert snap["attempts"] == 0  # waiting is not a failed attempt
        assert [w["id"] for w in snap["waits"]] == [by_prompt["right?"]["id"]]
        assert (await answer(srv, run["id"], by_prompt["right?"]["id"], "R")).status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert sorted(final["result"]["answers"]) == ["left?=L", "right?=R"]
        events = await collect(srv.client, run["id"])
        types = [e.event for e in events]
        assert types.count("wait.started") == 2 and types.count("wait.ended") == 2
        finished = [e.data["data"]["node"] for e in events if e.event == "node.updated"]
        assert sorted(finished) == ["left", "right"]  # each branch logged once, no internals
        assert final["attempts"] == 1


async def test_cancelling_a_waiting_run_withdraws_its_wait(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        cancelled = await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        assert cancelled.json()["status"] == "cancelled" and cancelled.json()["wait"] is None
        late = await answer(srv, run["id"], wait["id"], "too late")
        assert late.status_code == 409
        assert (await srv.client.get(f"/v1/runs/{run['id']}")).json()["status"] == "cancelled"


@pytest.mark.timeout(600)  # 500 runs started and parked on two shared cores
async def test_five_hundred_parked_runs_hold_no_worker(store: Store) -> None:
    from outlast.runtime.accept import RunRequest
    from tests.util import accept

    # Leases long enough that starting 500 runs at once on a busy machine (one event loop
    # for the API, the worker and the test) does not expire the worker's own leases: the
    # test is about parking, not about recovering lost leases.
    settings = make_settings(worker_lease_ttl=120.0, worker_heartbeat=5.0)
    async with serve(store, settings) as srv:
        ids = [
            (
                await accept(
                    store, RunRequest(graph="asks", input={}), graphs=["asks"], max_attempts=3
                )
            )[0].id
            for _ in range(500)
        ]

        async def parked() -> bool:
            runs = await store.list_runs(thread_id=None, status=None, limit=1000, before=None)
            ended = [r for r in runs if r.terminal]
            assert not ended, f"{len(ended)} runs ended instead of waiting: {ended[0]}"
            return sum(r.status == RunStatus.WAITING for r in runs) == 500

        await eventually(parked, timeout=480, every=0.2, what="500 runs parked")
        worker = srv_worker(srv)
        assert worker.held == {} and _held(srv) == []
        chosen = ids[317]
        wait = (await srv.client.get(f"/v1/runs/{chosen}")).json()["wait"]
        assert (await answer(srv, chosen, wait["id"], "Lin")).status_code == 202
        final = await wait_result(srv.client, chosen)
        assert final["result"]["greeting"] == "hello Lin"
        assert (await srv.client.get(f"/v1/runs/{ids[318]}")).json()["status"] == "waiting"


def srv_worker(srv: Server) -> Any:
    return srv.app.state.ctx.worker


async def test_a_retried_answer_with_its_idempotency_key_is_recognised(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        body = {"wait_id": wait["id"], "value": "Ada"}
        headers = {"Idempotency-Key": "answer-1"}
        first = await srv.client.post(f"/v1/runs/{run['id']}/input", json=body, headers=headers)
        retry = await srv.client.post(f"/v1/runs/{run['id']}/input", json=body, headers=headers)
        assert first.status_code == 202 and "idempotent-replayed" not in first.headers
        assert retry.status_code == 202 and retry.headers["idempotent-replayed"] == "true"
        other_value = await srv.client.post(
            f"/v1/runs/{run['id']}/input", json={**body, "value": "Bob"}, headers=headers
        )
        assert other_value.status_code == 422
        other_key = await srv.client.post(
            f"/v1/runs/{run['id']}/input", json=body, headers={"Idempotency-Key": "answer-2"}
        )
        assert other_key.status_code == 409
        assert (await wait_result(srv.client, run["id"]))["result"]["greeting"] == "hello Ada"
        types = [e.event for e in await collect(srv.client, run["id"])]
        assert types.count("wait.ended") == 1 and types.count("run.started") == 2


async def test_bad_input_to_waits_signals_and_threads_is_a_problem(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        before = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
        c = srv.client
        unknown = "00000000-0000-0000-0000-000000000000"
        cases = [
            (await c.post(f"/v1/runs/{unknown}/input", json={"wait_id": wait["id"]}), 404),
            (await c.post(f"/v1/runs/{run['id']}/input", json={"value": 1}), 422),
            (await c.post(f"/v1/runs/{run['id']}/input", json={"wait_id": "nope"}), 404),
            (
                await c.post(
                    f"/v1/runs/{run['id']}/input",
                    json={"wait_id": wait["id"], "value": 1, "extra": 2},
                ),
                422,
            ),
            (
                await c.post(
                    f"/v1/runs/{run['id']}/input",
                    json={"wait_id": wait["id"]},
                    headers={"Idempotency-Key": "has space"},
                ),
                400,
            ),
            (await c.post("/v1/signals/bad key!", json={}), 422),
            (await c.post("/v1/signals/ok", json={"payload": 1, "other": 2}), 422),
            (await c.post("/v1/threads/bad id!/runs", json={"input": {}}), 422),
            (await c.post("/v1/threads/t1/runs", json={"input": {}, "if_busy": "maybe"}), 422),
            (await c.get("/v1/threads/none-such/history"), 404),
            (await c.get("/v1/threads/none-such/state"), 404),
        ]
        for response, status in cases:
            assert response.status_code == status, (response.request.url, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["detail"]
        after = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
        assert after["status"] == "waiting" and after["last_seq"] == before["last_seq"]
        assert (await srv.client.get("/v1/runs", params={"thread_id": "t1"})).json()["runs"] == []


async def test_listing_shows_what_waiting_runs_wait_for(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="asks")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        listed = (await srv.client.get("/v1/runs", params={"status": "waiting"})).json()["runs"]
        assert [r["wait"]["id"] for r in listed] == [wait["id"]]
        assert listed[0]["wait"]["kind"] == "human"
