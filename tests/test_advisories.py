"""LangGraph's published security advisories, each as the request that exploited it on
LangGraph's server, and outlast's refusal of it, on both backends:

- GHSA-747p-c922-m55f: ``POST /threads`` with the ``thread_id`` of an existing thread and
  ``if_exists: "do_nothing"`` answered with that thread without asking the ``@auth``
  filters: anyone who knew (or guessed) an id read another user's thread. The fixed
  server answers 409, as for ``if_exists: "raise"``; outlast does, with API keys and with
  an ``auth.py`` whose filter (not the principal) is what keeps two callers apart.
- GHSA-jfj5-wrj9-63x4: a run was admitted on an assistant through the app's
  ``assistants.search`` handler instead of ``assistants.read``: a caller who could list an
  assistant but not read it could run it. A run, on every route that makes one (on a
  thread, stateless, waited, streamed, a cron), takes ``assistants.read``: 404 when its
  filter leaves the assistant out, 403 when it says False, and nothing is made.
- GHSA-2c9q-c2q9-qgqv (and GHSA-q3v5-r5ch-p57j before it): a run's ``webhook`` could be
  relative (``/runs``) or a loopback URL, which LangGraph's server posted to its own
  routes, past their authentication. Every face that takes a URL to post to (a
  LangGraph run's or cron's ``webhook``, ``/v1/webhooks``, an A2A push notification
  config) refuses such a URL by default, in any spelling of this machine (``localhost``,
  ``[::1]``, ``0.0.0.0``, ``2130706433``, ``0x7f.1``…), with a 4xx in its own words,
  and stores nothing; the deliverer refuses them again at send time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from a2a.helpers import new_data_part
from a2a.types import (
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from mcp.shared.exceptions import MCPError

from outlast.config import Settings
from outlast.store import Store
from outlast.store.crons import CronQuery
from outlast.webhooks.urls import UnsafeUrl, check_url, resolve
from tests.a2a_client import Agent, message
from tests.harness import ALICE, BOB, KEYS, auth, is_problem, make_settings, serve
from tests.mcp_client import connect

TESTS = Path(__file__).resolve().parent
ANN_DESK1 = {"Authorization": "Bearer ann-desk1"}
ANN_DESK2 = {"Authorization": "Bearer ann-desk2"}
ANN_BLIND = {"Authorization": "Bearer ann-blind"}
BEN = {"Authorization": "Bearer ben"}
YEARLY = "0 0 1 1 *"


def _app_settings(tmp_path: Path) -> Settings:
    """A deployment of the ``hitl`` graph with ``tests/advisories_app.py`` as its auth."""
    path = tmp_path / "langgraph.json"
    graphs = {"hitl": f"{TESTS}/lg_graphs.py:hitl"}
    auth_path = f"{TESTS}/advisories_app.py:auth"
    path.write_text(json.dumps({"graphs": graphs, "auth": {"path": auth_path}}))
    return make_settings(graphs_file=path)


async def _thread(client: httpx.AsyncClient, headers: dict[str, str], **body: Any) -> str:
    made = await client.post("/threads", json=body, headers=headers)
    assert made.status_code == 200, made.text
    thread_id: str = made.json()["thread_id"]
    return thread_id


# -- GHSA-747p-c922-m55f: a conditional thread create ------------------------------------


async def _taken(client: httpx.AsyncClient, thread_id: str, headers: dict[str, str]) -> None:
    """The thread's id, asked for by a caller who may not see it, with each ``if_exists``:
    the answer any taken id gets (as on LangGraph's fixed server), the same for both,
    and nothing of the thread in it."""
    for if_exists in ("do_nothing", "raise"):
        body = {"thread_id": thread_id, "if_exists": if_exists, "metadata": {"mine": "now"}}
        taken = await client.post("/threads", json=body, headers=headers)
        assert taken.status_code == 409, (if_exists, taken.text)
        assert taken.json() == {"detail": f"Thread {thread_id} already exists"}, taken.text
    assert (await client.get(f"/threads/{thread_id}", headers=headers)).status_code == 404


async def test_747p_do_nothing_returns_no_other_principals_thread(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, make_settings(api_keys=KEYS), with_worker=False) as srv:
        c = srv.client
        metadata = {"secret": "alice's plans"}
        tid = await _thread(c, auth(ALICE), metadata=metadata)
        await _taken(c, tid, auth(BOB))
        # the owner's conditional create is the one that answers with the thread, unchanged
        again = {"thread_id": tid, "if_exists": "do_nothing"}
        mine = await c.post("/threads", json=again, headers=auth(ALICE))
        assert mine.status_code == 200 and mine.json()["metadata"] == metadata, mine.text


async def test_747p_do_nothing_asks_the_apps_thread_filter(store: Store, tmp_path: Path) -> None:
    """ann's second desk is ann's principal: only the app's filter keeps desk 1's thread
    from it, as it keeps it from ben."""
    async with serve(store, _app_settings(tmp_path), with_worker=False) as srv:
        c = srv.client
        tid = await _thread(c, ANN_DESK1, metadata={"secret": "desk 1's plans"})
        stamped = {"secret": "desk 1's plans", "owner": "ann", "desk": "1"}
        for other in (ANN_DESK2, BEN):
            await _taken(c, tid, other)
        again = {"thread_id": tid, "if_exists": "do_nothing"}
        mine = await c.post("/threads", json=again, headers=ANN_DESK1)
        assert mine.status_code == 200 and mine.json()["metadata"] == stamped, mine.text


# -- GHSA-jfj5-wrj9-63x4: a run takes assistants.read ------------------------------------


def _run_routes(thread_id: str, assistant_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every request that makes a run on ``assistant_id``; a background run first, so a
    server that accepts it fails the test before any that would wait for the run."""
    run = {"assistant_id": assistant_id, "input": {"topic": "t"}}
    cron = {**run, "schedule": YEARLY}
    return [
        (f"/threads/{thread_id}/runs", run),
        ("/runs", run),
        (f"/threads/{thread_id}/runs/crons", cron),
        ("/runs/crons", cron),
        (f"/threads/{thread_id}/runs/wait", run),
        (f"/threads/{thread_id}/runs/stream", run),
        ("/runs/wait", run),
        ("/runs/stream", run),
    ]


async def test_jfj5_a_run_on_an_assistant_takes_assistants_read_not_search(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, _app_settings(tmp_path), with_worker=False) as srv:
        c = srv.client
        made = await c.post("/assistants", json={"graph_id": "hitl"}, headers=ANN_DESK1)
        assert made.status_code == 200, made.text
        aid = made.json()["assistant_id"]
        # the advisory's premise: search lists it to desk 2, read keeps it from desk 2
        listed = await c.post("/assistants/search", json={}, headers=ANN_DESK2)
        assert aid in [a["assistant_id"] for a in listed.json()], listed.text
        assert (await c.get(f"/assistants/{aid}", headers=ANN_DESK2)).status_code == 404
        assert (await c.get(f"/assistants/{aid}", headers=ANN_BLIND)).status_code == 403
        refusals = (
            (ANN_DESK2, {404}),
            (ANN_BLIND, {403}),
            # another user: the app's handlers decide who shares an assistant
            (BEN, {404}),
        )
        for headers, statuses in refusals:
            own = await _thread(c, headers)  # the caller's own thread: only the assistant
            for path, body in _run_routes(own, aid):
                refused = await c.post(path, json=body, headers=headers)
                assert refused.status_code in statuses, (path, refused.text)
                if refused.status_code == 404:
                    assert refused.json() == {"detail": f"Assistant '{aid}' not found"}
        assert await store.count_runs_by_status() == {}
        assert await store.count_crons(CronQuery("ann")) == 0
        # the desk that reads the assistant runs it
        own = await _thread(c, ANN_DESK1)
        body = {"assistant_id": aid, "input": {"topic": "t"}}
        ran = await c.post(f"/threads/{own}/runs", json=body, headers=ANN_DESK1)
        assert ran.status_code == 200, ran.text
        assert await store.count_runs_by_status() == {"queued": 1}


async def test_jfj5_an_mcp_tool_of_an_assistant_takes_assistants_read_not_search(
    store: Store, tmp_path: Path
) -> None:
    """MCP lists an assistant as a tool through ``assistants.search``; calling it is a
    run, which ``assistants.read`` must admit."""
    async with serve(store, _app_settings(tmp_path), with_worker=False) as srv:
        body = {"graph_id": "hitl", "name": "desk_one"}
        made = await srv.client.post("/assistants", json=body, headers=ANN_DESK1)
        assert made.status_code == 200, made.text
        async with connect(srv.url, "ann-desk2") as peer:
            tools = {t.name for t in (await peer.session.list_tools()).tools}
            assert "desk_one" in tools  # the premise: search lists it
            with pytest.raises(MCPError, match="not found"):
                await peer.call_as_task("desk_one", {"topic": "t"})
        assert await store.count_runs_by_status() == {}
        async with connect(srv.url, "ann-desk1") as peer:
            await peer.call_as_task("desk_one", {"topic": "t"})
        assert await store.count_runs_by_status() == {"queued": 1}


# -- GHSA-2c9q-c2q9-qgqv: webhooks to the server itself -----------------------------------


def _to_itself(port: int) -> list[str]:
    """URLs that reach the machine outlast runs on (``port``: the server's own)."""
    return [
        "/runs",
        "/threads",
        f"http://127.0.0.1:{port}/runs",
        "http://localhost/runs",
        "http://[::1]/runs",
        "http://0.0.0.0/runs",
        "http://2130706433/",
        f"https://127.0.0.1:{port}/runs",
        "https://127.0.0.2/",
        "https://localhost/runs",
        "https://LOCALHOST./runs",
        "https://studio.localhost/",
        "https://[::1]/runs",
        "https://0.0.0.0/runs",
        "https://0/",
        "https://2130706433/",
        "https://0x7f000001/",
        "https://0x7f.1/",
        "https://0177.0.0.1/",
        "https://127.1/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::127.0.0.1]/",
        "https://[64:ff9b::127.0.0.1]/",
        "https://[2002:7f00:1::]/",
    ]


@pytest.mark.parametrize("url", _to_itself(8000))
async def test_2c9q_urls_of_this_machine_are_refused_when_given_and_when_sent(url: str) -> None:
    with pytest.raises(UnsafeUrl):
        check_url(url, allow_private=False)
    with pytest.raises(UnsafeUrl):  # a URL stored before this check is not sent either
        await resolve(url, allow_private=False)


def test_2c9q_the_operators_opt_in_lets_loopback_through_but_never_a_relative_url() -> None:
    """``OUTLAST_WEBHOOK_ALLOW_PRIVATE`` (tests, a receiver on the operator's own
    machine) admits loopback; a relative URL, which LangGraph's server posted to its own
    routes, and ``0.0.0.0`` stay refused."""
    for url in ("http://127.0.0.1:8123/hook", "http://localhost:8123/hook", "http://[::1]/"):
        assert check_url(url, allow_private=True) == url
    for url in ("/runs", "runs", "http://0.0.0.0/runs", "https://0/"):
        with pytest.raises(UnsafeUrl):
            check_url(url, allow_private=True)


def _default(settings: Settings) -> Settings:
    assert settings.webhook_allow_private is False  # the default is what is tested
    return settings


async def test_2c9q_a_langgraph_runs_or_crons_webhook_to_itself_is_refused(store: Store) -> None:
    async with serve(store, _default(make_settings()), with_worker=False) as srv:
        c = srv.client
        tid = await _thread(c, {})
        kept = await c.post("/runs/crons", json={"assistant_id": "lg_hitl", "schedule": YEARLY})
        assert kept.status_code == 200, kept.text
        cron_id = kept.json()["cron_id"]
        for url in _to_itself(urlsplit(srv.url).port or 80):
            for path, body in _run_routes(tid, "lg_hitl"):
                refused = await c.post(path, json={**body, "webhook": url})
                assert refused.status_code == 422, (path, url, refused.text)
                assert refused.json()["detail"].startswith("webhook: "), refused.text
            patch = await c.patch(f"/runs/crons/{cron_id}", json={"webhook": url})
            assert patch.status_code == 422, (url, patch.text)
        assert await store.count_runs_by_status() == {}
        (cron,) = (await c.post("/runs/crons/search", json={})).json()
        assert "webhook" not in cron["payload"], cron
        assert await store.list_webhooks() == []


async def test_2c9q_a_v1_subscription_to_itself_is_refused(store: Store) -> None:
    async with serve(store, _default(make_settings()), with_worker=False) as srv:
        for url in _to_itself(urlsplit(srv.url).port or 80):
            body = {"url": url, "events": ["run.completed"]}
            is_problem(await srv.client.post("/v1/webhooks", json=body), 422)
        assert (await srv.client.get("/v1/webhooks")).json() == {"webhooks": []}
        assert await store.list_webhooks() == []


async def test_2c9q_an_a2a_push_config_to_itself_is_refused(store: Store, tmp_path: Path) -> None:
    settings = _default(make_settings(result_wait_max=20, data_dir=tmp_path))
    async with serve(store, settings) as srv, httpx.AsyncClient(timeout=60) as http:
        agent = Agent(http, srv.url)
        client = await agent.client("asks")
        task = await agent.send("asks", message(new_data_part({})))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        for url in _to_itself(urlsplit(srv.url).port or 80):
            config = TaskPushNotificationConfig(task_id=task.id, id="p1", url=url)
            with pytest.raises(InvalidParamsError, match=r"^url: "):
                await client.create_task_push_notification_config(config)
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert list(listed.configs) == []
        assert await store.run_webhooks(task.id) == []
