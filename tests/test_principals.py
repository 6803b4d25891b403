"""Principals and limits: nobody sees or touches another's runs; every limit is a problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from outlast.store import Store
from tests.harness import (
    ALICE,
    BOB,
    KEYS,
    NotYet,
    auth,
    eventually,
    is_problem,
    make_settings,
    serve,
    wait_status,
)

OUTLAST = (sys.executable, "-m", "outlast.cli")


async def test_keys_are_required_except_for_health_and_the_page(store: Store) -> None:
    async with serve(store, make_settings(api_keys=KEYS), with_worker=False) as srv:
        c = srv.client
        for method, path in [("GET", "/v1/runs"), ("POST", "/v1/runs"), ("GET", "/metrics")]:
            refused = is_problem(await c.request(method, path, json={}), 401)
            assert "API key is required" in refused["detail"]
        wrong = await c.get("/v1/runs", headers=auth("not-a-key-at-all-xx"))
        assert is_problem(wrong, 401)["detail"] == "unknown API key"
        assert wrong.headers["www-authenticate"] == "Bearer"
        for path in ("/healthz", "/readyz", "/", "/console/console.js", "/openapi.json"):
            assert (await c.get(path)).status_code == 200, path
        assert (await c.get("/v1/runs", headers=auth(ALICE))).status_code == 200


async def test_another_principal_gets_404_everywhere_and_moves_nothing(store: Store) -> None:
    async with serve(store, make_settings(api_keys=KEYS)) as srv:
        c = srv.client
        key = {"Idempotency-Key": "same-key"}
        body = {"graph": "eventual", "input": {}, "thread_id": "t-owned"}
        mine = await c.post("/v1/runs", json=body, headers={**auth(ALICE), **key})
        assert mine.status_code == 202
        run_id = mine.json()["id"]
        snap = await wait_status_as(c, run_id, "waiting", ALICE)
        wait_id = snap["wait"]["id"]
        # Idempotency keys are per principal: Bob's identical request is his own new run.
        theirs = await c.post(
            "/v1/runs", json={**body, "thread_id": None}, headers={**auth(BOB), **key}
        )
        assert theirs.status_code == 202 and theirs.json()["id"] != run_id
        bob = auth(BOB)
        for method, path, payload in [
            ("GET", f"/v1/runs/{run_id}", None),
            ("GET", f"/v1/runs/{run_id}/events", None),
            ("GET", f"/v1/runs/{run_id}/result?wait=0", None),
            ("GET", f"/v1/runs/{run_id}/effects", None),
            ("GET", f"/v1/runs/{run_id}/preserved", None),
            ("POST", f"/v1/runs/{run_id}/cancel", {}),
            ("POST", f"/v1/runs/{run_id}/input", {"wait_id": wait_id, "value": 1}),
            ("GET", "/v1/threads/t-owned/state", None),
            ("GET", "/v1/threads/t-owned/history", None),
        ]:
            response = await c.request(method, path, json=payload, headers=bob)
            assert is_problem(response, 404)["title"] == "Run not found", path
        # nor mint a stream token for it
        minted = await c.post(f"/v1/runs/{run_id}/stream-token", headers=bob)
        assert is_problem(minted, 404)["title"] == "Run not found"
        # Bob cannot join Alice's thread, and is not told whose it is.
        for path in ("/v1/runs", "/v1/threads/t-owned/runs"):
            joined = await c.post(
                path, json={"graph": "steps", "input": {}, "thread_id": "t-owned"}, headers=bob
            )
            refused = is_problem(joined, 422)
            assert (
                refused["title"] == "Thread unavailable"
                and "alice" not in refused["detail"].lower()
            )
        listed = (await c.get("/v1/runs", headers=bob)).json()["runs"]
        assert [r["id"] for r in listed] == [theirs.json()["id"]]
        # Bob's signal on the key Alice's run waits for wakes nothing of hers.
        sent = await c.post("/v1/signals/go", json={"payload": 1}, headers=bob)
        assert run_id not in sent.json()["runs"]  # (it may wake Bob's own run)
        assert (await c.get(f"/v1/runs/{run_id}", headers=auth(ALICE))).json()[
            "status"
        ] == "waiting"
        # Alice's own signal does, and she can follow with a browser-style token.
        woke = (await c.post("/v1/signals/go", json={}, headers=auth(ALICE))).json()["runs"]
        assert woke == [run_id]
        token = (await c.post(f"/v1/runs/{run_id}/stream-token", headers=auth(ALICE))).json()
        async with c.stream("GET", token["events_url"]) as stream:
            assert stream.status_code == 200
            lines = [line async for line in stream.aiter_lines()]
        assert "event: run.completed" in lines


async def wait_status_as(
    client: httpx.AsyncClient, run_id: str, status: str, key: str
) -> dict[str, Any]:
    async def probe() -> dict[str, Any]:
        snap: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}", headers=auth(key))).json()
        if snap.get("status") != status:
            raise NotYet(snap)
        return snap

    return await eventually(probe, what=f"run {run_id} {status}")


async def test_sizes_are_limited_and_refusals_change_nothing(store: Store) -> None:
    settings = make_settings(max_input_bytes=200, max_answer_bytes=100)
    async with serve(store, settings) as srv:
        c = srv.client
        big = {"graph": "asks", "input": {"text": "x" * 300}}
        refused = is_problem(await c.post("/v1/runs", json=big), 413)
        assert (
            refused["limit"] == "max_input_bytes" and "OUTLAST_MAX_INPUT_BYTES" in refused["detail"]
        )
        assert (await c.get("/v1/runs")).json()["runs"] == []
        run = (await c.post("/v1/runs", json={"graph": "asks", "input": {}})).json()
        wait = (await wait_status(c, run["id"], "waiting"))["wait"]
        answer = {"wait_id": wait["id"], "value": "y" * 200}
        too_big = is_problem(await c.post(f"/v1/runs/{run['id']}/input", json=answer), 413)
        assert too_big["limit"] == "max_answer_bytes"
        assert (await c.get(f"/v1/runs/{run['id']}")).json()["status"] == "waiting"
        signal = is_problem(await c.post("/v1/signals/k", json={"payload": "z" * 200}), 413)
        assert signal["limit"] == "max_answer_bytes"


async def test_runs_in_flight_are_limited_per_principal(store: Store) -> None:
    settings = make_settings(api_keys=KEYS, max_runs_in_flight=2)
    async with serve(store, settings, with_worker=False) as srv:  # runs stay queued
        c = srv.client
        first = await c.post(
            "/v1/runs", json={"graph": "steps"}, headers={**auth(ALICE), "Idempotency-Key": "a"}
        )
        await c.post("/v1/runs", json={"graph": "steps"}, headers=auth(ALICE))
        third = await c.post("/v1/runs", json={"graph": "steps"}, headers=auth(ALICE))
        refused = is_problem(third, 429)
        assert refused["limit"] == "max_runs_in_flight" and third.headers["retry-after"]
        # a retry of an accepted request still gets its run back
        again = await c.post(
            "/v1/runs", json={"graph": "steps"}, headers={**auth(ALICE), "Idempotency-Key": "a"}
        )
        assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
        # the limit is Alice's, not Bob's
        assert (await c.post("/v1/runs", json={"graph": "steps"}, headers=auth(BOB))).is_success
        assert len((await c.get("/v1/runs", headers=auth(ALICE))).json()["runs"]) == 2


async def test_event_streams_are_limited_per_principal(store: Store) -> None:
    settings = make_settings(api_keys=KEYS, max_streams=1)
    async with serve(store, settings, with_worker=False) as srv:
        c = srv.client
        run_id = (await c.post("/v1/runs", json={"graph": "steps"}, headers=auth(ALICE))).json()[
            "id"
        ]
        url = f"/v1/runs/{run_id}/events"
        async with c.stream("GET", url, headers=auth(ALICE)) as held:
            assert held.status_code == 200
            second = await c.get(url, headers=auth(ALICE))
            refused = is_problem(second, 429)
            assert refused["limit"] == "max_streams" and second.headers["retry-after"] == "2"

        async def reopened() -> bool:  # the slot is given back when the stream closes
            async with c.stream("GET", url, headers=auth(ALICE)) as again:
                return again.status_code == 200

        await eventually(reopened, what="the stream slot given back")


async def test_the_request_rate_is_limited_per_key(store: Store) -> None:
    async with serve(store, make_settings(api_keys=KEYS, rate_limit=2), with_worker=False) as srv:
        answers = [await srv.client.get("/v1/runs", headers=auth(ALICE)) for _ in range(8)]
        refused = [r for r in answers if r.status_code == 429]
        assert refused and answers[0].status_code == 200  # a burst of 4, then 2 a second
        body = is_problem(refused[0], 429)
        assert body["limit"] == "rate_limit" and int(refused[0].headers["retry-after"]) >= 1
        assert (await srv.client.get("/v1/runs", headers=auth(BOB))).status_code == 200
        assert (await srv.client.get("/healthz")).status_code == 200


async def test_large_event_payloads_are_stored_truncated(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTLAST_WORKSPACE_ROOT", str(tmp_path))
    async with serve(store, make_settings(max_event_bytes=2000)) as srv:
        run = (
            await srv.client.post(
                "/v1/runs",
                json={
                    "graph": "agent",
                    "input": {"messages": [{"role": "user", "content": "search the notes"}]},
                    "config": {"configurable": {"reports": str(tmp_path)}},
                },
            )
        ).json()
        final = (await srv.client.get(f"/v1/runs/{run['id']}/result?wait=30")).json()
        assert final["status"] == "completed"
        events = await store.read_events(run["id"], 0, 1000)
        big = [e for e in events if e.data.get("truncated")]
        assert big and all(e.data["bytes"] > 2000 and len(e.data["preview"]) <= 500 for e in big)
        assert {e.data.get("node") for e in big} >= {"tools"}


def test_serving_beyond_loopback_without_keys_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "outlast.cli", "serve", "--host", "0.0.0.0", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert "without API keys" in done.stderr and "--insecure-no-auth" in done.stderr


def test_a_new_key_is_printed_once_and_stored_hashed(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    done = subprocess.run(
        [*OUTLAST, "key", "new", "--principal", "carol", "--file", str(keys)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert key.startswith("olk_") and key not in keys.read_text()
    from outlast.api.auth import KeyRing

    assert KeyRing.load(None, keys).principal_for(key) == "carol"
