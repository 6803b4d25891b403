"""A LangGraph app's own ``auth.py`` (``langgraph.json``'s ``auth.path``) on every face:
its authenticate handler decides who calls (its identity is the principal), its
``@auth.on`` handlers stamp owners on what is made and filter what is read, searched,
streamed, resumed and cancelled, on the LangGraph face (the real ``langgraph_sdk``), the
thread protocol's commands and stream, ``/v1``, A2A (the ``a2a-sdk`` client) and MCP
(the ``mcp`` client); its refusals keep their status; graph factories and runs see the
user. Assistants and crons: ``test_user_auth_resources.py``."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from a2a.helpers import new_data_part
from a2a.types import CancelTaskRequest, GetTaskRequest, TaskNotFoundError, TaskState
from langgraph_sdk.errors import NotFoundError, PermissionDeniedError

from outlast.graph.manifest import ManifestError
from outlast.service.authz import matches
from outlast.store import Store
from tests import user_auth_graphs
from tests.a2a_client import Agent, message
from tests.harness import Server, eventually, is_problem, make_settings, serve
from tests.mcp_client import Peer, connect
from tests.user_auth_support import (
    ALICE,
    BOB,
    CAROL_P1,
    CAROL_P2,
    TESTS,
    manifest,
    settings,
)


async def interrupted(srv: Server, headers: dict[str, str], thread_id: str) -> None:
    async def probe() -> bool:
        got = await srv.client.get(f"/threads/{thread_id}", headers=headers)
        return got.status_code == 200 and got.json()["status"] == "interrupted"

    await eventually(probe, what="the thread interrupted")


async def test_two_users_never_meet_on_the_langgraph_face(store: Store, tmp_path: Path) -> None:
    async with serve(store, settings(tmp_path)) as srv:
        alice, bob = srv.sdk(headers=ALICE), srv.sdk(headers=BOB)
        thread = await alice.threads.create(metadata={"topic": "x"})
        assert thread["metadata"]["owner"] == "alice"  # stamped by threads.create
        tid = thread["thread_id"]
        run = await alice.runs.create(tid, "hitl", input={"topic": "t"})
        await interrupted(srv, ALICE, tid)
        assert [t["thread_id"] for t in await alice.threads.search()] == [tid]
        assert (await bob.threads.search()) == [] and await bob.threads.count() == 0
        for call in (
            bob.threads.get(tid),
            bob.threads.get_state(tid),
            bob.runs.get(tid, run["run_id"]),
            bob.runs.cancel(tid, run["run_id"]),
            bob.runs.create(tid, "hitl", command={"resume": "yes"}),
        ):
            with pytest.raises(NotFoundError):
                await call
        with pytest.raises(NotFoundError):
            [part async for part in bob.runs.join_stream(tid, run["run_id"])]
        # the run, as alice made it: stamped, and resumed by her alone
        made = await alice.runs.get(tid, run["run_id"])
        assert made["metadata"]["owner"] == "alice"
        resumed = await alice.runs.wait(tid, "hitl", command={"resume": "yes"})
        assert isinstance(resumed, dict) and resumed["done"] == "acted on 'yes'"
        # threads.delete takes a permission bob lacks: 403, and his thread stays
        mine = await bob.threads.create()
        with pytest.raises(PermissionDeniedError):
            await bob.threads.delete(mine["thread_id"])
        await alice.threads.delete(tid)
        assert await alice.threads.count() == 0


async def test_a_contains_filter_hides_a_thread_within_one_identity(
    store: Store, tmp_path: Path
) -> None:
    """carol's two tokens are one principal; the handlers' ``$contains`` filter on the
    project stamped on each thread keeps each token to its project's threads: a thread
    the filter leaves out is 404 on a read and missing from a search, on every face."""
    async with serve(store, settings(tmp_path)) as srv:
        p1, p2 = srv.sdk(headers=CAROL_P1), srv.sdk(headers=CAROL_P2)
        run = await p1.runs.create(None, "hitl", input={"topic": "p1 work"})  # stateless
        tid = run["thread_id"]
        made = await p1.threads.get(tid)  # the thread the run made carries the stamps
        assert made["metadata"]["projects"] == ["p1"] and made["metadata"]["owner"] == "carol"
        await interrupted(srv, CAROL_P1, tid)
        assert [t["thread_id"] for t in await p1.threads.search()] == [tid]
        assert await p2.threads.search() == [] and await p2.threads.count() == 0
        with pytest.raises(NotFoundError):
            await p2.threads.get(tid)
        with pytest.raises(NotFoundError):
            await p2.runs.create(tid, "hitl", command={"resume": "no"})
        # the thread protocol: its commands and its stream
        cmd = {"id": 1, "method": "state.get", "params": {}}
        seen = await srv.client.post(f"/threads/{tid}/commands", json=cmd, headers=CAROL_P2)
        # as for another principal's thread: empty, its head not p2's to know
        assert seen.json()["result"] == {"values": {}}, seen.text
        assert seen.json()["meta"]["applied_through_seq"] == 0
        start = {"id": 2, "method": "run.start", "params": {"input": {"topic": "sneak"}}}
        refused = await srv.client.post(f"/threads/{tid}/commands", json=start, headers=CAROL_P2)
        assert refused.json()["type"] == "error", refused.text
        stream = await srv.client.post(
            f"/threads/{tid}/stream/events", json={"channels": ["lifecycle"]}, headers=CAROL_P2
        )
        assert stream.status_code == 404
        ok = await srv.client.post(f"/threads/{tid}/commands", json=cmd, headers=CAROL_P1)
        assert ok.json()["result"]["values"]["topic"] == "p1 work", ok.text
        # /v1: the run is carol's, but not p2's to see, cancel or list
        for method, path in (
            ("GET", f"/v1/runs/{run['run_id']}"),
            ("POST", f"/v1/runs/{run['run_id']}/cancel"),
        ):
            is_problem(await srv.client.request(method, path, headers=CAROL_P2), 404)
        listed = (await srv.client.get("/v1/runs", headers=CAROL_P2)).json()
        assert listed["runs"] == []
        assert (
            await srv.client.get(f"/v1/runs/{run['run_id']}", headers=CAROL_P1)
        ).status_code == 200


async def _waiting(c: httpx.AsyncClient, run_id: str) -> bool:
    got = await c.get(f"/v1/runs/{run_id}", headers=CAROL_P1)
    return bool(got.json()["status"] == "waiting")


async def test_v1_and_a2a_stamp_and_filter_too(store: Store, tmp_path: Path) -> None:
    async with serve(store, settings(tmp_path)) as srv:
        c = srv.client
        body = {"graph": "hitl", "input": {"topic": "v1"}}
        made = await c.post("/v1/runs", json=body, headers=CAROL_P1)
        assert made.status_code == 202, made.text
        thread = (await c.get(f"/threads/{made.json()['thread_id']}", headers=CAROL_P1)).json()
        assert matches(thread["metadata"], {"owner": "carol", "projects": {"$contains": "p1"}})
        is_problem(await c.get(f"/v1/runs/{made.json()['id']}", headers=BOB), 404)
        # an answer resumes the run: create_run's handler sees it, and may veto it
        run_id = made.json()["id"]
        await eventually(lambda: _waiting(c, run_id), what="the v1 run waiting for its answer")
        snapshot = (await c.get(f"/v1/runs/{run_id}", headers=CAROL_P1)).json()
        answer = {"wait_id": snapshot["waits"][0]["id"], "value": "vetoed"}
        vetoed = await c.post(f"/v1/runs/{run_id}/input", json=answer, headers=CAROL_P1)
        is_problem(vetoed, 403)
        assert "vetoed" in vetoed.json()["detail"]
        taken = {**answer, "value": "fine"}
        assert (await c.post(f"/v1/runs/{run_id}/input", json=taken, headers=CAROL_P1)).is_success
        # A2A through the a2a-sdk client, with carol's tokens: a task p2 cannot get or cancel
        async with (
            httpx.AsyncClient(timeout=60, headers=CAROL_P1) as h1,
            httpx.AsyncClient(timeout=60, headers=CAROL_P2) as h2,
        ):
            p1, p2 = Agent(h1, srv.url), Agent(h2, srv.url)
            sent = await p1.send("hitl", message(new_data_part({"topic": "a2a"})))
            assert sent.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            a2a_thread = (await c.get(f"/threads/{sent.context_id}", headers=CAROL_P1)).json()
            assert a2a_thread["metadata"]["projects"] == ["p1"]
            theirs = await p2.client("hitl")
            with pytest.raises(TaskNotFoundError):
                await theirs.get_task(GetTaskRequest(id=sent.id))
            with pytest.raises(TaskNotFoundError):
                await theirs.cancel_task(CancelTaskRequest(id=sent.id))
            mine = await (await p1.client("hitl")).get_task(GetTaskRequest(id=sent.id))
            assert mine.id == sent.id and mine.status.state == TaskState.TASK_STATE_INPUT_REQUIRED


async def test_refusals_keep_their_status_and_public_routes_stay_open(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, settings(tmp_path), with_worker=False) as srv:
        c = srv.client
        missing = await c.post("/threads/search", json={})
        assert missing.status_code == 401
        assert missing.json() == {"detail": "invalid or missing token"}
        suspended = {"Authorization": "Bearer token-suspended"}
        refused = await c.post("/threads/search", json={}, headers=suspended)
        assert (refused.status_code, refused.json()) == (
            403,
            {"detail": "this account is suspended"},
        )
        assert is_problem(await c.get("/v1/runs", headers=suspended), 403)["detail"] == (
            "this account is suspended"
        )
        is_problem(await c.get("/v1/runs"), 401)
        for path in ("/ok", "/info", "/healthz", "/openapi.json"):
            assert (await c.get(path)).status_code == 200, path
        # a WebSocket upgrade runs the handler too: refused before it is accepted
        ws = srv.url.replace("http", "ws") + "/threads/t/stream/events"
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus

        with pytest.raises(InvalidStatus):
            async with connect(ws):
                pass


async def test_factories_and_runs_see_the_user(store: Store, tmp_path: Path) -> None:
    user_auth_graphs.SEEN.clear()
    async with serve(store, settings(tmp_path)) as srv:
        alice = srv.sdk(headers=ALICE)
        thread = await alice.threads.create()
        values = await alice.runs.wait(thread["thread_id"], "whoami", input={"topic": "?"})
        assert values == {"topic": "?", "who": "alice", "permissions": ["delete"]}
        await alice.threads.get_state(thread["thread_id"])
    assert ("threads.create_run", "alice") in user_auth_graphs.SEEN
    assert ("threads.read", "alice") in user_auth_graphs.SEEN


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("./no_such_file.py:auth", "does not import"),
        (f"{TESTS}/user_auth_app.py:USERS", "not a langgraph_sdk Auth()"),
    ],
)
def test_an_auth_path_that_names_no_auth_stops_the_server(
    tmp_path: Path, target: str, why: str
) -> None:
    from outlast.api.app import create_app

    with pytest.raises(ManifestError, match=f"auth.path.*{why}"):
        create_app(make_settings(graphs_file=manifest(tmp_path, target)))


async def test_without_auth_py_api_keys_still_decide(store: Store) -> None:
    async with serve(store, make_settings(api_keys="alice:" + "k" * 20)) as srv:
        assert (await srv.client.get("/v1/runs")).status_code == 401
        ok = await srv.client.get("/v1/runs", headers={"Authorization": "Bearer " + "k" * 20})
        assert ok.status_code == 200


async def test_the_store_handler_scopes_items_to_the_users_namespace(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, settings(tmp_path), with_worker=False) as srv:
        alice = srv.sdk(headers=ALICE)
        await alice.store.put_item(["prefs"], "theme", {"dark": True})
        item = await alice.store.get_item(["prefs"], "theme")
        assert item is not None and item["namespace"] == ["alice", "prefs"]
        found = await alice.store.search_items(["prefs"])
        assert [i["key"] for i in found["items"]] == ["theme"]
        assert (await alice.store.list_namespaces())["namespaces"] == [["alice", "prefs"]]


async def _listed(peer: Peer) -> list[str]:
    return [t["taskId"] for t in (await peer.wire.send_raw_request("tasks/list", {}))["tasks"]]


async def test_mcp_calls_run_as_the_user_under_its_handlers(store: Store, tmp_path: Path) -> None:
    """The ``mcp`` SDK's client with the app's bearer tokens: a call runs as the user,
    ``threads.create_run`` may refuse it (an MCP error), and a task is another identity's
    (or another project's) to neither get, cancel nor list."""
    from mcp.shared.exceptions import MCPError

    async with serve(store, settings(tmp_path)) as srv:
        async with connect(srv.url, "token-alice") as alice:
            got = await alice.session.call_tool("whoami", {"topic": "mcp"})
            assert got.structured_content is not None
            assert got.structured_content["who"] == "alice", got
            mine = await alice.call_as_task("hitl", {"topic": "mcp"})
        async with connect(srv.url, "token-rita") as rita:
            with pytest.raises(MCPError, match="read-only users run nothing"):
                await rita.session.call_tool("whoami", {"topic": "no"})
        async with connect(srv.url, "token-bob") as bob:
            for call in (bob.task(mine), bob.cancel_task(mine)):
                with pytest.raises(MCPError, match="Task not found"):
                    await call
        async with connect(srv.url, "token-carol-p1") as p1:
            p1_task = await p1.call_as_task("hitl", {"topic": "p1"})
            assert await _listed(p1) == [p1_task]
        async with connect(srv.url, "token-carol-p2") as p2:
            assert await _listed(p2) == []
            for call in (p2.task(p1_task), p2.cancel_task(p1_task)):
                with pytest.raises(MCPError, match="Task not found"):
                    await call
        async with connect(srv.url, "token-carol-p1") as p1:
            assert (await p1.task(p1_task)).status in ("working", "input_required")
