"""Credentials by reference: asked for by name when a tool runs, refreshed when they
expire, asked of a person when no provider has them, and never stored in the clear."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.fernet import Fernet

from outlast.nodes import CredentialMissing
from outlast.runtime.credentials import RunCredentials
from outlast.secretbox import SecretBox
from outlast.store import Store, Wait
from tests import credential_graphs
from tests.credential_graphs import digest
from tests.harness import answer, make_settings, post_run, serve, wait_result, wait_status


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "credentials"
    folder.mkdir()
    monkeypatch.setenv("OUTLAST_TEST_CREDENTIALS_DIR", str(folder))
    credential_graphs.short_lived._held = None  # no token minted by an earlier test
    return folder


async def test_a_token_that_expired_during_a_wait_is_refreshed(store: Store, ledger: Path) -> None:
    settings = make_settings(credential_providers=["tests.credential_graphs:short_lived"])
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, graph="long_wait", config={"configurable": {"pause": 1.5}})
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed", final
        first, second = final["result"]["first"], final["result"]["second"]
        assert first["source"] == second["source"] == "refresh"
        minted = sorted(p.read_text() for p in ledger.glob("minted-*"))
        assert len(minted) == 2  # the first token expired while the run slept
        assert first["token"] == digest(minted[0]) and second["token"] == digest(minted[1])


async def test_a_provider_that_refuses_asks_a_person_then_the_run_goes_on(
    store: Store, ledger: Path
) -> None:
    settings = make_settings(credential_providers=["tests.credential_graphs:refusing"])
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, graph="long_wait", config={"configurable": {"pause": 0.1}})
        snap = await wait_status(srv.client, run["id"], "waiting")
        wait = snap["wait"]
        assert wait["kind"] == "auth"
        assert wait["object"] == {"credential": "api", "reason": "the refresh token was revoked"}
        # the wrong shape: a clear 422 that does not repeat the value, and nothing changes
        for bad in (42, {"token": secret}, "", {"value": ""}, None):
            refused = await answer(srv, run["id"], wait["id"], bad)
            assert refused.status_code == 422, bad
            assert secret not in refused.text and "42" not in refused.json()["detail"]
        again = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
        assert again["status"] == "waiting" and again["wait"]["id"] == wait["id"]
        assert (await answer(srv, run["id"], wait["id"], secret)).status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed", final
        for used in (final["result"]["first"], final["result"]["second"]):
            assert used == {"token": digest(secret), "source": "answer"}
        events = await srv.store.read_events(run["id"], 0, 10_000)
        assert secret not in str([e.data for e in events])


async def test_a_sync_tool_asks_for_its_credential_too(store: Store, ledger: Path) -> None:
    """``credential_sync``: from LangGraph's worker thread, through the run's event loop;
    a refusal parks the run the same way, and the answer reaches the thread."""
    settings = make_settings(credential_providers=["tests.credential_graphs:refusing"])
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, graph="sync_tool")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        assert wait["object"]["credential"] == "api"
        assert (await answer(srv, run["id"], wait["id"], "tok-sync")).status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["result"]["got"] == {"token": digest("tok-sync"), "source": "answer"}


async def test_credential_sync_refuses_to_block_the_event_loop() -> None:
    box = SecretBox([Fernet.generate_key()])
    with pytest.raises(RuntimeError, match="await credential"):
        RunCredentials(box, [], []).resolve_sync("api")


async def test_a_credential_the_remote_side_rejects_is_asked_for_again(
    store: Store, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTLAST_CREDENTIAL_CRM", "stale-token")
    (ledger / "accepted").write_text("fresh-token")
    async with serve(store, make_settings()) as srv:
        run = await post_run(srv.client, graph="picky")
        first = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        assert first["object"] == {"credential": "crm", "reason": "the CRM answered 401"}
        assert (await answer(srv, run["id"], first["id"], "still-wrong")).status_code == 202

        async def asked_again() -> dict[str, Any] | None:
            snap = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
            wait = snap.get("wait")
            return wait if wait and wait["id"] != first["id"] else None

        from tests.harness import eventually

        second = await eventually(asked_again, what="a second credential wait")
        assert second["object"]["credential"] == "crm"  # the rejected answer is superseded
        answered = await answer(srv, run["id"], second["id"], {"value": "fresh-token"})
        assert answered.status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["result"]["got"] == {"token": digest("fresh-token"), "source": "answer"}


async def test_a_retried_answer_is_recognised_and_another_one_refused(
    store: Store, ledger: Path
) -> None:
    settings = make_settings(credential_providers=["tests.credential_graphs:refusing"])
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, graph="long_wait", config={"configurable": {"pause": 60}})
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        url, key = f"/v1/runs/{run['id']}/input", {"Idempotency-Key": "answer-1"}
        body = {"wait_id": wait["id"], "value": "tok-a"}
        assert (await srv.client.post(url, json=body, headers=key)).status_code == 202
        retried = await srv.client.post(url, json=body, headers=key)
        assert retried.status_code == 202 and retried.headers["Idempotent-Replayed"] == "true"
        other = await srv.client.post(url, json={**body, "value": "tok-b"}, headers=key)
        assert other.status_code == 422 and "tok-b" not in other.text


async def test_no_credential_is_stored_in_the_clear(
    store: Store, ledger: Path, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    """After runs that take credentials through every path (a runtime credential wait,
    one rejected and asked again, ``require_auth``), no table, file or checkpoint holds
    one of them."""
    secrets = [f"needle-{i}-{uuid.uuid4().hex}" for i in range(3)]
    (ledger / "accepted").write_text(secrets[1])
    settings = make_settings(credential_providers=["tests.credential_graphs:refusing"])
    async with serve(store, settings) as srv:
        for graph, secret in zip(("long_wait", "picky", "asks_auth"), secrets, strict=True):
            run = await post_run(srv.client, graph=graph, config={"configurable": {"pause": 0.1}})
            wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
            assert (await answer(srv, run["id"], wait["id"], secret)).status_code == 202
            final = await wait_result(srv.client, run["id"])
            assert final["status"] == "completed", final
    needles = [s.encode() for s in secrets] + [s.encode().hex().encode() for s in secrets]
    if backend == "sqlite":
        # every file of the store (the test's own ledger of the remote side aside)
        files = [p for p in tmp_path.rglob("*") if p.is_file() and ledger not in p.parents]
        assert any(p.suffix == ".db" for p in files)
        for path in files:
            data = path.read_bytes()
            assert not any(n in data for n in needles), path
    else:
        with psycopg.connect(request.getfixturevalue("pg_url")) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
                )
            ]
            assert "outlast_waits" in tables and "checkpoint_writes" in tables
            for table in tables:
                for (text,) in conn.execute(f'SELECT t::text FROM "{table}" t'):
                    assert not any(n.decode() in text for n in needles), table


def _sealed_wait(box: SecretBox, value: Any) -> Wait:
    import datetime as dt

    now = dt.datetime.now(dt.UTC)
    return Wait(
        id=str(uuid.uuid4()),
        run_id="r",
        interrupt_id="credential:api:1",
        kind="auth",
        status="resumed",
        object={"credential": "api"},
        prompt=None,
        schema=None,
        event_keys=None,
        has_default=False,
        default=None,
        probe=None,
        answer=box.seal_answer(value),
        answered_how="input",
        since=now,
        last_signal_at=None,
        lease_expires_at=None,
        wake_at=None,
        renewals=0,
        failures=0,
        answered_at=now,
    )


async def test_an_answer_sealed_with_a_key_no_longer_configured_asks_again() -> None:
    """A key rotation that dropped the old key: the credential cannot be read; the run
    asks for it again (saying why) instead of failing or using something else. With the
    old key kept after the new one, it reads."""
    old_key, new_key = Fernet.generate_key(), Fernet.generate_key()
    old = SecretBox([old_key])
    wait = _sealed_wait(old, "tok")
    assert (await RunCredentials(old, [], [wait]).resolve("api")).value == "tok"
    with pytest.raises(CredentialMissing, match="secret keys changed"):
        await RunCredentials(SecretBox([new_key]), [], [wait]).resolve("api")
    rotated = SecretBox([new_key, old_key])
    assert (await RunCredentials(rotated, [], [wait]).resolve("api")).value == "tok"


async def test_an_answer_with_an_expiry_expires() -> None:
    import datetime as dt

    box = SecretBox([Fernet.generate_key()])
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).isoformat()
    wait = _sealed_wait(box, {"value": "tok", "expires_at": past})
    from outlast.nodes import CredentialExpired

    with pytest.raises(CredentialExpired, match="expired at"):
        await RunCredentials(box, [], [wait]).resolve("api")
