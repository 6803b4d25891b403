"""No key in a URL, no secret in a log: stream tokens instead of keys in query strings,
and every log line of a real server's session redacted."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet

from outlast.api import stream_tokens
from outlast.secretbox import SecretBox
from outlast.store import Store
from tests.harness import eventually, make_settings, post_run, serve
from tests.procs import kill, start_server

KEY = "ops-key-" + "k" * 24


async def test_a_stream_opens_with_a_token_for_its_run_only(store: Store) -> None:
    settings = make_settings(api_keys=f"ops:{KEY},eve:eve-key-{'e' * 24}")
    async with serve(store, settings) as srv:
        keyed = {"Authorization": f"Bearer {KEY}"}
        srv.client.headers.update(keyed)
        run = await post_run(srv.client, graph="steps")
        other = await post_run(srv.client, graph="steps")
        del srv.client.headers["Authorization"]
        minted = await srv.client.post(f"/v1/runs/{run['id']}/stream-token", headers=keyed)
        assert minted.status_code == 201
        token = minted.json()["token"]
        assert KEY not in token and minted.json()["events_url"].endswith(token)
        url = f"/v1/runs/{run['id']}/events"
        async with srv.client.stream("GET", url, params={"stream_token": token}) as opened:
            assert opened.status_code == 200
        refused: list[tuple[str, dict[str, str], str]] = [
            (f"/v1/runs/{other['id']}/events", {"stream_token": token}, "another run"),
            (url, {"stream_token": token[:-2] + "xx"}, "not a stream token"),
            (url, {"access_token": KEY}, "not accepted in URLs"),
            (f"/v1/runs/{run['id']}", {"stream_token": token}, "an API key is required"),
        ]
        box = SecretBox.from_settings(srv.settings)
        expired, _ = stream_tokens.mint(box, "ops", run["id"], ttl=-1)
        refused.append((url, {"stream_token": expired}, "expired"))
        elsewhere, _ = stream_tokens.mint(SecretBox([Fernet.generate_key()]), "ops", run["id"], 60)
        refused.append((url, {"stream_token": elsewhere}, "not a stream token of this server"))
        for path, params, why in refused:
            answer = await srv.client.get(path, params=params)
            assert answer.status_code == 401, (path, params)
            assert why in answer.json()["detail"], answer.json()
        # a token is minted with a key, for a run of that key's principal only
        assert (await srv.client.post(f"/v1/runs/{run['id']}/stream-token")).status_code == 401
        eve = {"Authorization": f"Bearer eve-key-{'e' * 24}"}
        stolen = await srv.client.post(f"/v1/runs/{run['id']}/stream-token", headers=eve)
        assert stolen.status_code == 404


async def _session(url: str, secret: str) -> dict[str, Any]:
    """What a client does with keys: headers both ways, a key wrongly put in a URL, a
    stream token, an answer to an auth wait."""
    keyed = {"Authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        run = (
            await client.post(
                "/v1/runs",
                json={"graph": "long_wait", "config": {"configurable": {"pause": 0.1}}},
                headers=keyed,
            )
        ).json()
        assert (await client.get("/v1/runs", headers={"x-api-key": KEY})).status_code == 200
        assert (await client.get("/v1/runs", params={"access_token": KEY})).status_code == 401

        async def waiting() -> dict[str, Any] | None:
            snap = (await client.get(f"/v1/runs/{run['id']}", headers=keyed)).json()
            return snap if snap["status"] == "waiting" else None

        snap = await eventually(waiting, what="the run waiting for its credential")
        token = (await client.post(f"/v1/runs/{run['id']}/stream-token", headers=keyed)).json()
        events = f"/v1/runs/{run['id']}/events"
        async with client.stream("GET", events, params={"stream_token": token["token"]}) as s:
            assert s.status_code == 200
        answered = await client.post(
            f"/v1/runs/{run['id']}/input",
            json={"wait_id": snap["wait"]["id"], "value": secret},
            headers=keyed,
        )
        assert answered.status_code == 202
        final = await client.get(f"/v1/runs/{run['id']}/result?wait=60", headers=keyed)
        assert final.json()["status"] == "completed", final.json()
        return {"token": token["token"]}


@pytest.mark.slow
async def test_no_credential_reaches_a_log_line(tmp_path: Path) -> None:
    secret = f"typed-secret-{uuid.uuid4().hex}"
    log = tmp_path / "server.log"
    proc, url = start_server(
        f"sqlite:///{tmp_path / 'outlast.db'}",
        log,
        OUTLAST_API_KEYS=f"ops:{KEY}",
        OUTLAST_DATA_DIR=str(tmp_path / "data"),
        OUTLAST_CREDENTIAL_PROVIDERS='["tests.credential_graphs:refusing"]',
    )
    try:
        seen = await _session(url, secret)
    finally:
        kill(proc, signal.SIGTERM)
    lines = log.read_text(errors="replace").splitlines()
    access = [line for line in lines if "HTTP/1.1" in line]
    assert any("POST /v1/runs/" in line and "/input" in line for line in access)
    assert any("stream_token=(redacted)" in line for line in access)
    assert any("access_token=(redacted)" in line for line in access)
    for line in lines:
        assert KEY not in line and secret not in line and seen["token"] not in line, line
