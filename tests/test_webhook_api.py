"""``/v1/webhooks`` at the edge, on both backends: bad input changes nothing, secrets are
never stored or shown in the clear, URLs are checked when subscribed and again at every
attempt, a redirect is not followed, an answer is not read past a small limit, and
LangGraph's per-run ``webhook`` (through ``langgraph_sdk``) posts the run once it ends."""

from __future__ import annotations

import asyncio
import base64
import socket
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk.errors import UnprocessableEntityError

from outlast.store import Store
from outlast.store.postgres import PostgresStore
from outlast.store.sqlite import SqliteStore
from tests.harness import (
    ALICE,
    BOB,
    KEYS,
    auth,
    eventually,
    is_problem,
    make_settings,
    serve,
    wait_result,
)
from tests.receiver import Answer, Receiver, receiver

SECRET = "whsec_" + base64.b64encode(b"k" * 24).decode()


def _settings(tmp_path: Path, **overrides: Any) -> Any:
    base = {
        "webhook_allow_private": True,
        "webhook_backoff": 0.05,
        "webhook_backoff_max": 0.1,
        "webhook_timeout": 2.0,
        "data_dir": tmp_path,
    }
    return make_settings(**{**base, **overrides})


@pytest.fixture
def hooks() -> Any:
    with receiver() as r:
        yield r


async def _delivered(client: httpx.AsyncClient, hook_id: str, **headers: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        got = await client.get(f"/v1/webhooks/{hook_id}/deliveries", headers=headers)
        found = [d for d in got.json()["deliveries"] if d["status"] in ("delivered", "dead")]
        return found[0] if found else None

    return await eventually(probe, every=0.05, what="a settled delivery")


async def _stored_secrets(store: Store) -> list[str]:
    if isinstance(store, PostgresStore):
        async with store.pool.connection() as conn:
            cur = await conn.execute("SELECT secret FROM outlast_webhooks")
            return [r["secret"] for r in await cur.fetchall()]
    assert isinstance(store, SqliteStore)
    with sqlite3.connect(store.path) as db:
        return [r[0] for r in db.execute("SELECT secret FROM outlast_webhooks")]


async def test_bad_subscriptions_are_refused_and_change_nothing(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, _settings(tmp_path, webhook_allow_private=False)) as srv:
        bad = [
            ({"url": "http://example.com/h", "events": ["run.completed"]}, "scheme 'http'"),
            ({"url": "https://127.0.0.1/h", "events": ["run.completed"]}, "loopback"),
            ({"url": "https://10.1.2.3/h", "events": ["run.completed"]}, "private"),
            ({"url": "https://[::1]/h", "events": ["run.completed"]}, "loopback"),
            ({"url": "https://u:p@example.com/", "events": ["run.completed"]}, "credentials"),
            ({"url": "ftp://example.com/", "events": ["run.completed"]}, "pattern"),
            ({"url": "https://example.com/", "events": ["node.updated"]}, "Input should be"),
            ({"url": "https://example.com/", "events": []}, "at least 1"),
            (
                {"url": "https://example.com/", "events": ["run.completed"], "secret": "x"},
                "pattern",
            ),
            (
                {
                    "url": "https://example.com/",
                    "events": ["run.completed"],
                    "secret": "whsec_AA==",
                },
                "pattern",
            ),
            ({"url": "https://example.com/", "events": ["run.completed"], "extra": 1}, "extra"),
        ]
        for body, says in bad:
            response = await srv.client.post("/v1/webhooks", json=body)
            problem = is_problem(response, 422)
            assert says in str(problem), (body, problem)
        assert (await srv.client.post("/v1/webhooks", content=b"{nope")).status_code == 422
        assert (await srv.client.get("/v1/webhooks")).json() == {"webhooks": []}
        missing = "00000000-0000-0000-0000-000000000000"
        for method, path in (
            ("GET", f"/v1/webhooks/{missing}"),
            ("DELETE", f"/v1/webhooks/{missing}"),
            ("GET", "/v1/webhooks/not-an-id/deliveries"),
            ("POST", f"/v1/webhooks/{missing}/deliveries/{missing}/retry"),
        ):
            is_problem(await srv.client.request(method, path), 404)


async def test_secrets_are_stored_sealed_and_shown_once(store: Store, tmp_path: Path) -> None:
    async with serve(store, _settings(tmp_path)) as srv:
        body = {"url": "https://example.com/h", "events": ["run.failed"]}
        made = await srv.client.post("/v1/webhooks", json=body, headers={"Idempotency-Key": "a"})
        assert made.status_code == 201 and made.headers["location"].endswith(made.json()["id"])
        secret = made.json()["secret"]
        assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
        retried = await srv.client.post("/v1/webhooks", json=body, headers={"Idempotency-Key": "a"})
        assert retried.status_code == 200 and retried.headers["idempotent-replayed"] == "true"
        assert retried.json()["id"] == made.json()["id"] and retried.json()["secret"] == secret
        other = {**body, "events": ["run.completed"]}
        reused = await srv.client.post("/v1/webhooks", json=other, headers={"Idempotency-Key": "a"})
        is_problem(reused, 422)
        given = await srv.client.post("/v1/webhooks", json={**body, "secret": SECRET})
        assert given.status_code == 201 and given.json()["secret"] is None
        listed = (await srv.client.get("/v1/webhooks")).json()["webhooks"]
        assert [h["secret"] for h in listed] == [None, None] and all(h["signed"] for h in listed)
        one = (await srv.client.get(f"/v1/webhooks/{made.json()['id']}")).json()
        assert one["secret"] is None
    stored = await _stored_secrets(store)
    assert len(stored) == 2
    for sealed in stored:
        assert secret not in sealed and SECRET not in sealed
        assert secret[6:] not in sealed and SECRET[6:] not in sealed


async def test_another_principal_sees_no_subscription_and_hears_no_run(
    store: Store, tmp_path: Path, hooks: Receiver
) -> None:
    async with serve(store, _settings(tmp_path, api_keys=KEYS)) as srv:
        body = {"url": hooks.url, "events": ["run.completed"]}
        made = await srv.client.post("/v1/webhooks", json=body, headers=auth(ALICE))
        hook = made.json()
        assert (await srv.client.get("/v1/webhooks", headers=auth(BOB))).json()["webhooks"] == []
        for method in ("GET", "DELETE"):
            response = await srv.client.request(
                method, f"/v1/webhooks/{hook['id']}", headers=auth(BOB)
            )
            is_problem(response, 404)
        bob = await srv.client.post("/v1/runs", json={"input": {"n": 1}}, headers=auth(BOB))
        alice = await srv.client.post("/v1/runs", json={"input": {"n": 1}}, headers=auth(ALICE))
        delivered = await _delivered(srv.client, hook["id"], **auth(ALICE))
        assert delivered["run_id"] == alice.json()["id"] != bob.json()["id"]
        async with httpx.AsyncClient(base_url=srv.url, headers=auth(BOB)) as as_bob:
            await wait_result(as_bob, bob.json()["id"])  # ended, and heard by nobody:
        found = await srv.client.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=auth(ALICE))
        assert [d["run_id"] for d in found.json()["deliveries"]] == [alice.json()["id"]]


async def test_redirects_are_not_followed_and_answers_not_read_past_a_limit(
    store: Store, tmp_path: Path, hooks: Receiver
) -> None:
    with receiver() as elsewhere:
        hooks.script = [
            Answer(302, headers=(("location", elsewhere.url),)),
            # more than loopback's socket buffers hold: the write blocks until read or cut
            Answer(500, b"x" * 32_000_000),
        ]
        async with serve(store, _settings(tmp_path)) as srv:
            made = await srv.client.post(
                "/v1/webhooks", json={"url": hooks.url, "events": ["run.completed"]}
            )
            await srv.client.post("/v1/runs", json={"input": {"n": 1}})
            delivered = await _delivered(srv.client, made.json()["id"])
        assert elsewhere.got == []
    redirect, huge, ok = delivered["history"]
    assert redirect["status_code"] == 302 and "not followed" in redirect["error"]
    assert huge["status_code"] == 500 and len(huge["error"]) <= 500
    assert hooks.cut, "the sender read the whole 32 MB answer"
    assert ok["status_code"] == 200 and delivered["status"] == "delivered"


async def test_a_name_that_resolves_to_loopback_is_refused_at_send_time(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A name is not resolved when subscribed: one whose DNS answer is loopback (here a
    # stand-in resolver's, as a rebinding name's changed answer would be) is accepted
    # then, and refused when the attempt resolves it. ("localhost" is refused when
    # subscribed: it is this machine whatever DNS says.)
    loop = asyncio.get_running_loop()
    real = loop.getaddrinfo

    async def rebound(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebound.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return await real(host, port, *args, **kwargs)

    monkeypatch.setattr(loop, "getaddrinfo", rebound)
    settings = _settings(tmp_path, webhook_allow_private=False, webhook_retry_period=0.2)
    async with serve(store, settings) as srv:
        made = await srv.client.post(
            "/v1/webhooks", json={"url": "https://rebound.test:1/h", "events": ["run.completed"]}
        )
        assert made.status_code == 201, made.text
        await srv.client.post("/v1/runs", json={"input": {"n": 1}})
        dead = await _delivered(srv.client, made.json()["id"])
    assert dead["status"] == "dead"
    assert all("loopback" in a["error"] for a in dead["history"])


async def test_wait_kinds_choose_which_waits_notify(
    store: Store, tmp_path: Path, hooks: Receiver
) -> None:
    async with serve(store, _settings(tmp_path)) as srv:
        body = {"url": hooks.url, "events": ["run.waiting"], "wait_kinds": ["human"]}
        made = await srv.client.post("/v1/webhooks", json=body)
        asked = await srv.client.post("/v1/runs", json={"graph": "asks", "input": {}})
        delivered = await _delivered(srv.client, made.json()["id"])
    payload = hooks.got[0].json()
    assert delivered["run_id"] == asked.json()["id"] == payload["data"]["run_id"]
    assert payload["type"] == "run.waiting" and payload["data"]["event"]["kinds"] == ["human"]


async def test_langgraph_per_run_webhook_posts_the_run_when_it_ends(
    store: Store, tmp_path: Path, hooks: Receiver
) -> None:
    async with serve(store, _settings(tmp_path)) as srv:
        client = srv.sdk()
        thread = await client.threads.create()
        run = await client.runs.create(
            thread["thread_id"], "steps", input={"n": 1}, webhook=f"{hooks.url}/lg"
        )
        await client.runs.join(thread["thread_id"], run["run_id"])
        (got,) = await asyncio.to_thread(hooks.wait_for, lambda r: len(r) >= 1, "the webhook")
        with pytest.raises(UnprocessableEntityError) as refused:
            await client.runs.create(
                thread["thread_id"], "steps", input={"n": 1}, webhook="ftp://example.com/"
            )
        assert "scheme 'ftp' not allowed" in str(refused.value)
    body = got.json()
    assert got.path == "/lg" and "webhook-signature" not in got.headers
    assert body["run_id"] == run["run_id"] and body["thread_id"] == thread["thread_id"]
    assert body["status"] == "success" and body["values"]["steps"][-1] == "finish"
    assert body["assistant_id"] == run["assistant_id"] and body["error"] is None
    assert "webhook_sent_at" in body
    assert len(hooks.got) == 1  # once: the run's end, not each of its events
