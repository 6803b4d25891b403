"""Push notifications end to end: ``outlast serve`` (a real process, on both backends)
delivers to a real HTTP receiver, signed, at least once, through receivers that fail,
hang and redirect, and through a SIGKILL of the server in the middle of a delivery."""

from __future__ import annotations

import asyncio
import base64
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from cryptography.fernet import Fernet

from outlast import faults
from tests.harness import eventually_blocking
from tests.procs import kill, start_server
from tests.receiver import Answer, Receiver, receiver

pytestmark = pytest.mark.slow

SECRET = "whsec_" + base64.b64encode(b"s" * 32).decode()
FAST = {
    "OUTLAST_WEBHOOK_ALLOW_PRIVATE": "1",
    "OUTLAST_WEBHOOK_BACKOFF": "0.05",
    "OUTLAST_WEBHOOK_BACKOFF_MAX": "0.2",
    # an attempt's deadline: long enough for a loaded machine; the hung receiver's test
    # and the killed server's (whose claim lapses after it + 5 s) set their own
    "OUTLAST_WEBHOOK_TIMEOUT": "10",
    "OUTLAST_SECRET_KEYS": Fernet.generate_key().decode(),
}


@pytest.fixture
def hooks(db_url: str) -> Iterator[Receiver]:
    """A receiver, and no subscription but the test's own: the Postgres database is the
    session's, and a subscription left by an earlier test would hear this test's runs
    (and its deliveries, to a receiver gone, would stay pending)."""
    _forget_subscriptions(db_url)
    with receiver() as r:
        yield r
    _forget_subscriptions(db_url)


def _forget_subscriptions(db_url: str) -> None:
    if db_url.startswith("postgres"):
        with psycopg.connect(db_url, autocommit=True) as conn:
            # their deliveries go with them; before the first server there is no table
            conn.execute(
                "DO $$ BEGIN IF to_regclass('outlast_webhooks') IS NOT NULL THEN "
                "DELETE FROM outlast_webhooks; END IF; END $$"
            )


def _server(db_url: str, log: Path, **env: str) -> tuple[Any, str]:
    return start_server(db_url, log, **{**FAST, "OUTLAST_DATA_DIR": str(log.parent), **env})


def _subscribe(url: str, target: str, *events: str, **fields: Any) -> dict[str, Any]:
    body = {"url": target, "events": list(events or ("run.completed",)), **fields}
    made = httpx.post(f"{url}/v1/webhooks", json=body, timeout=30)
    assert made.status_code == 201, made.text
    hook: dict[str, Any] = made.json()
    return hook


def _run(url: str, graph: str = "steps") -> str:
    made = httpx.post(f"{url}/v1/runs", json={"graph": graph, "input": {"n": 1}}, timeout=30)
    assert made.status_code == 202, made.text
    run_id: str = made.json()["id"]
    return run_id


def _deliveries(url: str, hook_id: str) -> list[dict[str, Any]]:
    got = httpx.get(f"{url}/v1/webhooks/{hook_id}/deliveries?limit=500", timeout=30)
    assert got.status_code == 200, got.text
    found: list[dict[str, Any]] = got.json()["deliveries"]
    return found


def _settled(url: str, hook_id: str, status: str, count: int = 1) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]] | None:
        found = _deliveries(url, hook_id)
        done = [d for d in found if d["status"] == status]
        return found if len(done) == count else None

    return eventually_blocking(probe, every=0.05, what=f"{count} {status} deliveries")


def test_a_receiver_that_fails_twice_gets_it_the_third_time_signed(
    db_url: str, tmp_path: Path, hooks: Receiver
) -> None:
    hooks.script = [Answer(500, b"busy"), Answer(503)]
    proc, url = _server(db_url, tmp_path / "s.log")
    try:
        hook = _subscribe(url, f"{hooks.url}/in", secret=SECRET)
        assert "secret" not in hook or hook["secret"] is None  # it was ours: never echoed
        run_id = _run(url)
        (delivery,) = _settled(url, hook["id"], "delivered")
    finally:
        kill(proc)
    got = hooks.got
    assert [r.path for r in got] == ["/in"] * 3
    assert {r.id for r in got} == {delivery["id"]}  # one id for every attempt
    for request in got:
        payload = request.verified(SECRET)
        assert payload["type"] == "run.completed" and payload["data"]["run_id"] == run_id
        assert payload["data"]["status"] == "completed"
    assert [(a["n"], a["status_code"]) for a in delivery["history"]] == [
        (1, 500),
        (2, 503),
        (3, 200),
    ]
    assert delivery["history"][0]["error"] == "HTTP 500: busy"


def test_a_hung_receiver_times_out_and_the_next_attempt_delivers(
    db_url: str, tmp_path: Path, hooks: Receiver
) -> None:
    hooks.script = [Answer(200, delay=8.0)]  # past the 3 s deadline
    proc, url = _server(db_url, tmp_path / "s.log", OUTLAST_WEBHOOK_TIMEOUT="3")
    try:
        hook = _subscribe(url, hooks.url)
        _run(url)
        (delivery,) = _settled(url, hook["id"], "delivered")
    finally:
        kill(proc)
    first, last = delivery["history"][0], delivery["history"][-1]
    assert first["status_code"] is None and first["error"] == "no answer within 3 s"
    assert last["status_code"] == 200
    assert {r.id for r in hooks.got} == {delivery["id"]}
    # a subscription made without a secret still signs: one was made for it
    assert hook["signed"] and hook["secret"].startswith("whsec_")
    hooks.got[-1].verified(hook["secret"])


def test_a_server_killed_mid_delivery_sends_it_again_with_the_same_id(
    db_url: str, tmp_path: Path, hooks: Receiver
) -> None:
    # a short deadline: the claim of the killed server lapses 5 s after it
    fast = {"OUTLAST_WEBHOOK_TIMEOUT": "3"}
    first, url = _server(
        db_url, tmp_path / "s1.log", OUTLAST_FAULTS=faults.WEBHOOK_AFTER_SEND, **fast
    )
    port = int(url.rsplit(":", 1)[1])
    try:
        hook = _subscribe(url, hooks.url, secret=SECRET)
        run_id = _run(url)
        assert first.wait(timeout=120) == -signal.SIGKILL  # the receiver had answered
    finally:
        kill(first)
    assert len(hooks.got) == 1
    second, url = _server(db_url, tmp_path / "s2.log", port=port, **fast)
    try:
        (delivery,) = _settled(url, hook["id"], "delivered")
    finally:
        kill(second)
    assert len(hooks.got) == 2 and hooks.got[0].id == hooks.got[1].id == delivery["id"]
    for request in hooks.got:
        assert request.verified(SECRET)["data"]["run_id"] == run_id
    # the first attempt was never recorded (the process died first); the second was
    assert delivery["attempts"] == 2
    assert [a["n"] for a in delivery["history"]] == [2]


def test_a_dead_delivery_is_retried_by_hand_and_arrives(
    db_url: str, tmp_path: Path, hooks: Receiver
) -> None:
    hooks.otherwise = Answer(500)
    proc, url = _server(db_url, tmp_path / "s.log", OUTLAST_WEBHOOK_RETRY_PERIOD="0.5")
    try:
        hook = _subscribe(url, hooks.url)
        _run(url)
        (dead,) = _settled(url, hook["id"], "dead")
        assert dead["attempts"] >= 1 and dead["last_error"] == "HTTP 500"
        assert dead["next_at"] is None
        tries = len(hooks.got)
        hooks.otherwise = Answer(200)
        base = f"{url}/v1/webhooks/{hook['id']}/deliveries"
        retried = httpx.post(f"{base}/{dead['id']}/retry", timeout=30)
        assert retried.status_code == 202, retried.text
        assert retried.json()["status"] == "pending"
        again = httpx.post(f"{base}/{dead['id']}/retry", timeout=30)
        assert again.status_code == 409, again.text  # not dead: on its way, or arrived
        (done,) = _settled(url, hook["id"], "delivered")
    finally:
        kill(proc)
    assert done["id"] == dead["id"] and len(hooks.got) > tries
    assert {r.id for r in hooks.got} == {dead["id"]}


def test_many_runs_each_notify_once_and_the_outbox_drains(
    db_url: str, tmp_path: Path, hooks: Receiver
) -> None:
    # two processes on Postgres share the outbox: SKIP LOCKED keeps their claims apart,
    # so without a crash no delivery is sent twice (bench/webhooks.py takes 1,000)
    workers = "2" if db_url.startswith("postgres") else "1"
    proc, url = _server(db_url, tmp_path / "s.log", OUTLAST_WORKERS=workers)
    try:
        hook = _subscribe(url, hooks.url)
        runs = 60

        async def accept() -> list[str]:
            async with httpx.AsyncClient(base_url=url, timeout=60) as client:
                body = {"graph": "steps", "input": {"n": 1}}
                replies = await asyncio.gather(
                    *(client.post("/v1/runs", json=body) for _ in range(runs))
                )
            return [reply.json()["id"] for reply in replies]

        ids = asyncio.run(accept())
        got = hooks.wait_for(lambda r: len(r) >= runs, f"{runs} deliveries")
        _settled(url, hook["id"], "delivered", count=runs)
        pending = httpx.get(f"{url}/v1/webhooks/{hook['id']}/deliveries?status=pending")
        assert pending.json()["deliveries"] == []
        metrics = httpx.get(f"{url}/metrics").text
    finally:
        kill(proc)
    assert len(got) == runs  # no duplicate: one request per delivery
    assert sorted(r.json()["data"]["run_id"] for r in got) == sorted(ids)
    assert len({r.id for r in got}) == runs
    assert 'outlast_webhook_deliveries{status="pending"} 0.0' in metrics
